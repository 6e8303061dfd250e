import { test } from 'tap'
import { toMarkdown, type BuildResult, type Results, type ScenarioResult } from '../../bench/report.js'

/** One build's figures with a given ratio to its baseline (the rest is what a report needs to print a row). */
function figures (ratio: number): BuildResult {
  const median = { requestsPerSecond: 1000 * ratio, p50: 1, p99: 2, errors: 0 }
  const baseline = { requestsPerSecond: 1000, p50: 1, p99: 2, errors: 0 }
  return {
    baseline: { label: 'hello-world', median: baseline, rounds: [baseline] },
    target: { label: 'target', median, rounds: [median] },
    ratio,
    goal: '–',
    met: true
  }
}

function scenario (id: string, ratio: number, baseRatio: number, boundedBy?: string): ScenarioResult {
  return { ...figures(ratio), id, title: `the ${id} row`, compare: 'throughput', boundedBy, base: { ...figures(baseRatio), build: 'main' } }
}

test('a row bounded by another is reported as a share of that row\'s ratio, for each build', async (t) => {
  const results: Results = {
    date: '2026-11-26T00:00:00.000Z',
    machine: { cpus: 2, cpuModel: 'test', node: 'v24', fastify: '5', threadpool: '4' },
    settings: { connections: 50, warmupSeconds: 2, seconds: 6, rounds: 2, smallUsers: 1000, bigUsers: 1000, quick: false },
    builds: ['change', 'main'],
    load: { before: 0.1, after: 0.2, max: 0.5 },
    scenarios: [scenario('floor', 0.2, 0.25), scenario('refresh', 0.1, 0.2, 'floor'), scenario('other', 0.5, 0.5)]
  }
  const report = toMarkdown(results)
  t.match(report, 'the refresh row: 0.50 of the ratio of "the floor row" (0.20), measured in the same rounds, which does part of its work and nothing more (base: 0.80).')
  t.notMatch(report, /the other row: [\d.]+ of the ratio/, 'a row bounded by none gets no such line')
})

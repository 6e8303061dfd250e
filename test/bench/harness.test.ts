import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { test } from 'tap'
import type { Results } from '../../bench/report.js'

const RUN = fileURLToPath(new URL('../../bench/run.ts', import.meta.url))

// The harness end to end, short: the built service (pretest builds dist/) and hello-world
// on free ports, one scenario, two alternating rounds, the three output files. The suite keeps
// the machine busy, so the quiet-machine check is lifted here (BENCH_MAX_LOAD): only the harness is tested,
// in the shortest rounds that still measure (a quarter of a second each: the figures are not read).
test('npm run bench (BENCH_QUICK=1) measures a scenario against hello-world and writes its reports', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'account-bench-test-'))
  t.teardown(() => rmSync(out, { recursive: true, force: true }))
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', RUN], {
    env: { ...process.env, BENCH_QUICK: '1', BENCH_SECONDS: '0.25', BENCH_WARMUP_SECONDS: '0.1', BENCH_SCENARIOS: 'get-user-a,process', BENCH_OUT: out, BENCH_MAX_LOAD: '1000' },
    timeout: 60_000
  })
  t.match(stderr, /load average at the start: \d+\.\d\d/)
  t.match(stderr, /load average at the end: \d+\.\d\d/)

  const results = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as Results
  t.equal(results.settings.quick, true)
  t.equal(results.settings.seconds, 0.25, 'BENCH_SECONDS sets the rounds\' length')
  t.equal(results.settings.warmupSeconds, 0.1)
  t.same(results.builds, ['change'], 'no base build unless BENCH_BASE names one')
  t.equal(results.load.max, 1000)
  t.ok(results.load.before >= 0 && results.load.after >= 0, 'the load average before and after is in the report')
  t.equal(results.settings.rounds, 2)
  t.same(results.scenarios.map(({ id }) => id), ['get-user-a'])
  const [reads] = results.scenarios
  t.equal(reads.baseline.label, 'hello-world')
  t.equal(reads.baseline.rounds.length, 2)
  t.equal(reads.target.rounds.length, 2)
  t.ok(reads.baseline.median.requestsPerSecond > 0, 'hello-world answered')
  t.ok(reads.target.median.requestsPerSecond > 0, 'the service answered')
  t.equal(reads.target.median.errors, 0, 'every authenticated read got 200')
  t.ok(reads.ratio > 0 && Number.isFinite(reads.ratio))
  t.ok((reads.rssMb ?? 0) > 20, `the service's RSS after the scenario: ${reads.rssMb} MB`)
  t.match(reads.goal, /RSS < 150 MB/, 'judged against the issue\'s ceiling')
  t.ok(results.process !== undefined && results.process.startToReadyMs > 0)
  t.ok((results.process?.rssMb.header ?? 0) > 0, 'RSS of the service read after the load')

  const markdown = readFileSync(join(out, 'latest.md'), 'utf8')
  t.equal(markdown, stdout, 'the table printed is the table written')
  t.match(markdown, /^Load average \(1 min\): \d+\.\d\d at the start \(at most 1000\), \d+\.\d\d at the end\.$/m)
  t.match(markdown, /\| GET \/users\/:id, variant A \(Bearer\) \| \d+ \|/)
  t.match(readFileSync(join(out, 'ratios.svg'), 'utf8'), /^<svg [^>]*>[\s\S]*GET \/users\/:id, variant A[\s\S]*<\/svg>\n$/)
})

test('npm run bench on a busy machine measures nothing and writes nothing', async (t) => {
  const out = join(mkdtempSync(join(tmpdir(), 'account-bench-test-')), 'results')
  t.teardown(() => rmSync(dirname(out), { recursive: true, force: true }))
  // No load average is below -1: the machine is "busy" whatever it does, and the run must not wait for it.
  const run = promisify(execFile)(process.execPath, ['--import', 'tsx', RUN], {
    env: { ...process.env, BENCH_QUICK: '1', BENCH_SCENARIOS: 'get-user-a', BENCH_OUT: out, BENCH_MAX_LOAD: '-1', BENCH_SETTLE_SECONDS: '0' },
    timeout: 60_000
  })
  const failure = await run.then(() => undefined, (error: { code: number, stderr: string }) => error)
  t.equal(failure?.code, 1, 'exit code 1')
  t.match(failure?.stderr, /load average \d+\.\d\d stayed above -1 \(BENCH_MAX_LOAD\): not measuring a busy machine/)
  t.notOk(existsSync(out), 'no results written')
})

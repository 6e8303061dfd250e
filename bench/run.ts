import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONNECTIONS, logIn, signUpOnce, spreadUsers, type Measurement, type Session, type Timing } from './load.js'
import { OAuthBrowser, offlineTokensOf, seedOAuthClients, type AppTokens } from './oauth.js'
import { startHelloWorld, startService, startSigningFloor, type Running } from './processes.js'
import { changeBuild, prepareBaseBuild, type Build } from './builds.js'
import { DEFAULT_MAX_LOAD, oneMinuteLoad, quietMachine, SETTLE_WAIT_MS } from './machine.js'
import { RSS_GOAL_MB, toMarkdown, toSvg, type BuildResult, type ProcessResult, type Results, type ScenarioResult } from './report.js'
import { OAUTH_GRANTS, scenarios, type Bench, type Scenario, type Service, type ServiceName } from './scenarios.js'
import { seedStore } from './seed.js'

/*
 * npm run bench: every scenario against its baseline, alternating the two for
 * BENCH_ROUNDS rounds, medians. BENCH_BASE=<git ref> (main, say) builds that commit
 * beside this tree and measures both in the same rounds, alternating, so that a
 * change is judged against its base on one machine state. It starts only on a quiet
 * machine (bench/machine.ts: the one-minute load average at most BENCH_MAX_LOAD,
 * 0.5 by default) and writes nothing otherwise. BENCH_QUICK=1 for a short run (BENCH_SECONDS and
 * BENCH_WARMUP_SECONDS set a round's timed and warm-up seconds: the harness's own test runs the shortest),
 * BENCH_SCENARIOS to pick scenarios by id (and `process` for start time and RSS),
 * BENCH_SETTLE_SECONDS how long to wait for a quiet machine (180), BENCH_OUT for the output folder, BENCH_BIG_USERS for the big store's size,
 * BENCH_PROFILE to write the services' --cpu-prof profiles to a folder, BENCH_SERVICE_FLAGS for more
 * Node flags of the services (`--trace-gc`, `--perf-basic-prof`) and BENCH_SERVICE_LOG for a file that
 * takes what they print.
 */
const quick = process.env.BENCH_QUICK === '1'
const defaultTiming: Timing = quick ? { warmupSeconds: 0.5, seconds: 1.5 } : { warmupSeconds: 2, seconds: 6 }
const timing: Timing = {
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? defaultTiming.warmupSeconds),
  seconds: Number(process.env.BENCH_SECONDS ?? defaultTiming.seconds)
}
const rounds = Number(process.env.BENCH_ROUNDS ?? 2)
const smallUsers = 1000
const bigUsers = Number(process.env.BENCH_BIG_USERS ?? (quick ? 100_000 : 1_000_000))
const outDir = resolve(process.env.BENCH_OUT ?? fileURLToPath(new URL('./results', import.meta.url)))
const profileDir = process.env.BENCH_PROFILE === undefined ? undefined : resolve(process.env.BENCH_PROFILE)
const selected = process.env.BENCH_SCENARIOS?.split(',').map((id) => id.trim())
const wanted = (id: string) => selected === undefined || selected.includes(id)
const baseRef = process.env.BENCH_BASE === undefined || process.env.BENCH_BASE === '' ? undefined : process.env.BENCH_BASE
const maxLoad = Number(process.env.BENCH_MAX_LOAD ?? DEFAULT_MAX_LOAD)
const settleWaitMs = process.env.BENCH_SETTLE_SECONDS === undefined ? SETTLE_WAIT_MS : Number(process.env.BENCH_SETTLE_SECONDS) * 1000

const workDir = mkdtempSync(join(tmpdir(), 'account-bench-'))
const started: Running[] = []
let hello: Promise<Running> | undefined
let signingFloor: Promise<Running> | undefined

async function track (running: Promise<Running>): Promise<Running> {
  started.push(await running)
  return await running
}

/** One build under benchmark, with its services (started at first use, each on a store of its own). */
interface Measured {
  build: Build
  bench: Bench
  services: Map<ServiceName, Promise<Service>>
  /** The services the scenario under way asked for (its RSS is theirs). */
  used: Set<ServiceName>
}

function measured (build: Build, index: number): Measured {
  const services = new Map<ServiceName, Promise<Service>>()
  const used = new Set<ServiceName>()
  const bench: Bench = {
    timing,
    hello: () => (hello ??= track(startHelloWorld())),
    signingFloor: () => (signingFloor ??= track(startSigningFloor())),
    service: (name) => {
      used.add(name)
      let service = services.get(name)
      if (service === undefined) {
        service = openService(build, index, name)
        services.set(name, service)
      }
      return service
    }
  }
  return { build, bench, services, used }
}

/** The largest RSS of the services a scenario loaded of one build, read right after that build's own last load in it: the "after load, in every scenario". */
async function rssAfterScenario ({ services, used }: Measured): Promise<number | undefined> {
  const figures = await Promise.all([...used].map(async (name) => (await services.get(name))?.running.rssMb() ?? Number.NaN))
  return figures.length === 0 ? undefined : Math.max(...figures)
}

function databaseFile (buildIndex: number, name: ServiceName) {
  return join(workDir, `${buildIndex}-${name}.db`)
}

async function openService (build: Build, buildIndex: number, name: ServiceName): Promise<Service> {
  const users = name === 'big' ? bigUsers : smallUsers
  const seeding = Date.now()
  const code = await build.storeCode()
  const file = databaseFile(buildIndex, name)
  await seedStore(file, users, code)
  const clients = await seedOAuthClients(file, code)
  log(`seeded ${users.toLocaleString('en')} users and 2 OAuth apps for ${name} (${build.label}) in ${Date.now() - seeding} ms`)
  const variant = name === 'cookie' ? 'cookie' : 'header'
  const running = await track(startService({ entry: build.entry, variant, databaseFile: file, profileDir }))
  await signUpOnce(running.url, variant)
  let sessions: Promise<Session[]> | undefined
  let offlineTokens: Promise<Array<AppTokens & { refresh_token: string }>> | undefined
  return {
    running,
    users,
    sessions: () => (sessions ??= logIn(running.url, spreadUsers(CONNECTIONS, users))),
    oauth: {
      clients,
      browser: new OAuthBrowser(running.url, clients.app),
      offlineTokens: () => (offlineTokens ??= offlineTokensOf(running.url, clients.app, spreadUsers(OAUTH_GRANTS, users)))
    }
  }
}

function median (values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

function medianOf (runs: Measurement[]): Measurement {
  const alongside = runs.flatMap((run) => run.alongside ?? [])
  return {
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    p50: median(runs.map((run) => run.p50)),
    p99: median(runs.map((run) => run.p99)),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    ...(alongside.length === 0
      ? {}
      : { alongside: { label: alongside[0].label, requestsPerSecond: median(alongside.map((run) => run.requestsPerSecond)), p99: median(alongside.map((run) => run.p99)) } })
  }
}

interface Step {
  side: 'baseline' | 'target'
  /** Which build's runs it feeds (a shared baseline feeds every build's). */
  build: number
}

/**
 * One round's measurements, in an order that is reversed every other round, so that no side always
 * runs first (on a cooler machine) or last. A shared baseline is measured once a round.
 */
function roundSteps (scenario: Scenario, round: number): Step[] {
  const steps: Step[] = scenario.baseline.shared === true ? [{ side: 'baseline', build: 0 }] : []
  builds.forEach((_build, index) => {
    if (scenario.baseline.shared !== true) steps.push({ side: 'baseline', build: index })
    if (scenario.target.shared !== true || index === 0) steps.push({ side: 'target', build: index })
  })
  return round % 2 === 0 ? steps : steps.reverse()
}

async function runScenario (scenario: Scenario): Promise<ScenarioResult> {
  const baselineRuns: Measurement[][] = builds.map(() => [])
  const targetRuns: Measurement[][] = builds.map(() => [])
  const rss: Array<number | undefined> = builds.map(() => undefined)
  for (const { used } of builds) used.clear()
  for (let round = 0; round < rounds; round++) {
    const steps = roundSteps(scenario, round)
    // Where each build's own last load of the round is (its target, or its own baseline; a shared
    // side loads none of its services): its RSS is read right after it in the last round, so that
    // every build is read as soon after its load as the others. Read at the end, the build measured last
    // still held its work in flight (two Argon2id hashes, 38 MB, after a login row) while the others
    // had long finished theirs.
    const lastLoad = new Map<number, number>()
    steps.forEach((step, index) => { if (scenario[step.side].shared !== true) lastLoad.set(step.build, index) })
    for (const [index, { side, build }] of steps.entries()) {
      const measurement = await scenario[side].measure(builds[build].bench)
      const runs = side === 'target' ? targetRuns : baselineRuns
      if (scenario[side].shared === true) runs.forEach((ofBuild) => ofBuild.push(measurement))
      else runs[build].push(measurement)
      const of = scenario[side].shared !== true ? ` (${builds[build].build.label})` : ''
      const alongside = measurement.alongside === undefined ? '' : `; ${measurement.alongside.label} alongside: ${measurement.alongside.requestsPerSecond.toFixed(0)} req/s, p99 ${measurement.alongside.p99} ms`
      log(`${scenario.id} round ${round + 1} ${side}${of}: ${measurement.requestsPerSecond.toFixed(0)} req/s, p99 ${measurement.p99} ms, ${measurement.errors} errors${alongside}`)
      if (round === rounds - 1 && lastLoad.get(build) === index) rss[build] = await rssAfterScenario(builds[build])
    }
  }
  const [change, ...bases] = builds.map((_build, index) => judge(scenario, baselineRuns[index], targetRuns[index], rss[index]))
  return {
    ...change,
    id: scenario.id,
    title: scenario.title,
    compare: scenario.compare,
    boundedBy: scenario.boundedBy,
    boundedGoal: scenario.boundedGoal,
    base: bases.length === 0 ? undefined : { build: builds[1].build.label, ...bases[0] }
  }
}

/** One build's figures in a scenario: the median ratio over the rounds, and whether each goal is met. */
function judge (scenario: Scenario, baselineRuns: Measurement[], targetRuns: Measurement[], rssMb: number | undefined): BuildResult {
  const ratios = baselineRuns.map((baseline, round) => scenario.compare === 'p99'
    ? targetRuns[round].p99 / baseline.p99
    : targetRuns[round].requestsPerSecond / baseline.requestsPerSecond)
  const ratio = median(ratios)
  const target = medianOf(targetRuns)
  const ratioGoal = scenario.goal
  const ratioMet = ratioGoal === undefined || (scenario.compare === 'p99' ? ratio < ratioGoal : ratio >= ratioGoal)
  const p99Met = scenario.p99Below === undefined || target.p99 < scenario.p99Below
  const perCore = scenario.perCore === undefined
    ? undefined
    : { perSecond: target.requestsPerSecond / (scenario.perCore.cores === 'one' ? 1 : cpus().length), goal: scenario.perCore.goal, reference: scenario.perCore.reference }
  const perCoreMet = perCore === undefined || perCore.perSecond >= perCore.goal
  const rssMet = rssMb === undefined || rssMb < RSS_GOAL_MB
  const goal = [
    ratioGoal === undefined ? undefined : scenario.compare === 'p99' ? `< ${ratioGoal}× p99` : `≥ ${ratioGoal}`,
    scenario.p99Below === undefined ? undefined : `p99 < ${scenario.p99Below} ms`,
    perCore === undefined ? undefined : `≥ ${perCore.goal.toLocaleString('en')}/s per core`,
    rssMb === undefined ? undefined : `RSS < ${RSS_GOAL_MB} MB`
  ].filter((part) => part !== undefined).join(', ') || '–'
  return {
    baseline: { label: scenario.baseline.label, median: medianOf(baselineRuns), rounds: baselineRuns },
    target: { label: scenario.target.label, median: target, rounds: targetRuns },
    ratio,
    ratioGoal,
    goal,
    perCore,
    rssMb,
    met: ratioMet && p99Met && perCoreMet && rssMet && target.errors === 0
  }
}

/**
 * Restarts, spawn to listening: each build on an existing store (its key already made), and
 * hello-world, the floor that Node and Fastify set; taken in turn.
 */
async function measureStarts (): Promise<{ builds: number[], helloWorld: number }> {
  const files = await Promise.all(builds.map(async ({ build, services }, index) => {
    const file = databaseFile(index, 'header')
    if (!services.has('header')) await seedStore(file, smallUsers, await build.storeCode())
    return file
  }))
  const times: number[][] = builds.map(() => [])
  const helloWorld: number[] = []
  for (let start = 0; start < (quick ? 2 : 5); start++) {
    for (const [index, { build }] of builds.entries()) {
      const running = await startService({ entry: build.entry, variant: 'header', databaseFile: files[index] })
      times[index].push(running.readyMs)
      await running.stop()
    }
    const running = await startHelloWorld()
    helloWorld.push(running.readyMs)
    await running.stop()
  }
  return { builds: times.map(median), helloWorld: median(helloWorld) }
}

function log (line: string) {
  process.stderr.write(`${line}\n`)
}

const builds: Measured[] = [measured(changeBuild, 0)]
const results: ScenarioResult[] = []
let processResult: ProcessResult | undefined
let load: Results['load'] | undefined
try {
  if (baseRef !== undefined) builds.push(measured(prepareBaseBuild(baseRef, workDir, log), 1))
  const before = await quietMachine(maxLoad, settleWaitMs, log)
  if (before === undefined) {
    log(`load average ${oneMinuteLoad().toFixed(2)} stayed above ${maxLoad} (BENCH_MAX_LOAD): not measuring a busy machine. Stop what else runs, or raise BENCH_MAX_LOAD to measure anyway (and say so).`)
    process.exitCode = 1
  } else {
    log(`load average at the start: ${before.toFixed(2)}`)
    for (const scenario of scenarios.filter(({ id }) => wanted(id))) results.push(await runScenario(scenario))
    if (wanted('process')) {
      const rssOf = async ({ services }: Measured) => {
        const rssMb: Record<string, number> = {}
        for (const [name, service] of services) rssMb[name] = (await service).running.rssMb()
        return rssMb
      }
      const rss = await Promise.all(builds.map(rssOf))
      const starts = await measureStarts()
      processResult = {
        startToReadyMs: starts.builds[0],
        helloWorldStartToReadyMs: starts.helloWorld,
        rssMb: rss[0],
        base: builds.length > 1 ? { startToReadyMs: starts.builds[1], rssMb: rss[1] } : undefined
      }
    }
    load = { before, after: oneMinuteLoad(), max: maxLoad }
    log(`load average at the end: ${load.after.toFixed(2)}`)
  }
} finally {
  for (const running of started) await running.stop()
  rmSync(workDir, { recursive: true, force: true })
}

if (load !== undefined) writeReport(load)

/** The tables printed and written to BENCH_OUT: latest.md, latest.json, ratios.svg. */
function writeReport (load: NonNullable<Results['load']>): void {
  const fastifyVersion = (createRequire(import.meta.url)('fastify/package.json') as { version: string }).version
  const report: Results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version, fastify: fastifyVersion, threadpool: process.env.UV_THREADPOOL_SIZE ?? '4 (default)' },
    settings: { connections: CONNECTIONS, ...timing, rounds, smallUsers, bigUsers, quick },
    builds: builds.map(({ build }) => build.label),
    load,
    scenarios: results,
    process: processResult
  }
  const markdown = toMarkdown(report)
  process.stdout.write(markdown)
  mkdirSync(outDir, { recursive: true })
  writeFileSync(join(outDir, 'latest.md'), markdown)
  writeFileSync(join(outDir, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
  writeFileSync(join(outDir, 'ratios.svg'), toSvg(report))
}

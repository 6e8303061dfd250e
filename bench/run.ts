import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONNECTIONS, logIn, spreadUsers, type Measurement, type Session, type Timing } from './load.js'
import { OAuthBrowser, offlineTokensOf, seedOAuthClients, type AppTokens } from './oauth.js'
import { startHelloWorld, startService, type Running } from './processes.js'
import { toMarkdown, toSvg, type ProcessResult, type Results, type ScenarioResult } from './report.js'
import { OAUTH_GRANTS, scenarios, type Bench, type Scenario, type Service, type ServiceName } from './scenarios.js'
import { seedStore } from './seed.js'

/*
 * npm run bench: every scenario against its baseline, alternating the two for
 * BENCH_ROUNDS rounds, medians. BENCH_QUICK=1 for a short run, BENCH_SCENARIOS
 * to pick scenarios by id (and `process` for start time and RSS), BENCH_OUT for
 * the output folder, BENCH_BIG_USERS for the big store's size, BENCH_PROFILE to
 * write the services' --cpu-prof profiles to a folder.
 */
const quick = process.env.BENCH_QUICK === '1'
const timing: Timing = quick ? { warmupSeconds: 0.5, seconds: 1.5 } : { warmupSeconds: 2, seconds: 6 }
const rounds = Number(process.env.BENCH_ROUNDS ?? 2)
const smallUsers = 1000
const bigUsers = Number(process.env.BENCH_BIG_USERS ?? (quick ? 100_000 : 1_000_000))
const outDir = resolve(process.env.BENCH_OUT ?? fileURLToPath(new URL('./results', import.meta.url)))
const profileDir = process.env.BENCH_PROFILE === undefined ? undefined : resolve(process.env.BENCH_PROFILE)
const selected = process.env.BENCH_SCENARIOS?.split(',').map((id) => id.trim())
const wanted = (id: string) => selected === undefined || selected.includes(id)

const workDir = mkdtempSync(join(tmpdir(), 'account-bench-'))
const started: Running[] = []
let hello: Promise<Running> | undefined
const services = new Map<ServiceName, Promise<Service>>()

const bench: Bench = {
  timing,
  hello: () => (hello ??= track(startHelloWorld())),
  service: (name) => {
    let service = services.get(name)
    if (service === undefined) {
      service = openService(name)
      services.set(name, service)
    }
    return service
  }
}

async function track (running: Promise<Running>): Promise<Running> {
  started.push(await running)
  return await running
}

function databaseFile (name: ServiceName) {
  return join(workDir, `${name}.db`)
}

async function openService (name: ServiceName): Promise<Service> {
  const users = name === 'big' ? bigUsers : smallUsers
  const seeding = Date.now()
  await seedStore(databaseFile(name), users)
  const clients = await seedOAuthClients(databaseFile(name))
  log(`seeded ${users.toLocaleString('en')} users and 2 OAuth apps for ${name} in ${Date.now() - seeding} ms`)
  const running = await track(startService({ variant: name === 'cookie' ? 'cookie' : 'header', databaseFile: databaseFile(name), profileDir }))
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
  return {
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    p50: median(runs.map((run) => run.p50)),
    p99: median(runs.map((run) => run.p99)),
    errors: runs.reduce((sum, run) => sum + run.errors, 0)
  }
}

async function runScenario (scenario: Scenario): Promise<ScenarioResult> {
  const baselineRuns: Measurement[] = []
  const targetRuns: Measurement[] = []
  for (let round = 0; round < rounds; round++) {
    // Alternate which side goes first, so that neither always runs on a warmer (or hotter) machine.
    const sides = round % 2 === 0 ? ['baseline', 'target'] as const : ['target', 'baseline'] as const
    for (const side of sides) {
      const measurement = await scenario[side].measure(bench)
      ;(side === 'baseline' ? baselineRuns : targetRuns).push(measurement)
      log(`${scenario.id} round ${round + 1} ${side}: ${measurement.requestsPerSecond.toFixed(0)} req/s, p99 ${measurement.p99} ms, ${measurement.errors} errors`)
    }
  }
  const ratios = baselineRuns.map((baseline, round) => scenario.compare === 'p99'
    ? targetRuns[round].p99 / baseline.p99
    : targetRuns[round].requestsPerSecond / baseline.requestsPerSecond)
  const ratio = median(ratios)
  const target = medianOf(targetRuns)
  const ratioGoal = scenario.goal
  const ratioMet = ratioGoal === undefined || (scenario.compare === 'p99' ? ratio < ratioGoal : ratio >= ratioGoal)
  const p99Met = scenario.p99Below === undefined || target.p99 < scenario.p99Below
  // The service is one process: its figure per core is its req/s, whatever the machine's core count.
  const perCore = scenario.perCore === undefined ? undefined : { perSecond: target.requestsPerSecond, ...scenario.perCore }
  const perCoreMet = perCore === undefined || perCore.perSecond >= perCore.goal
  const goal = [
    ratioGoal === undefined ? undefined : scenario.compare === 'p99' ? `< ${ratioGoal}× p99` : `≥ ${ratioGoal}`,
    scenario.p99Below === undefined ? undefined : `p99 < ${scenario.p99Below} ms`,
    perCore === undefined ? undefined : `≥ ${perCore.goal.toLocaleString('en')}/s per core`
  ].filter((part) => part !== undefined).join(', ') || '–'
  return {
    id: scenario.id,
    title: scenario.title,
    compare: scenario.compare,
    baseline: { label: scenario.baseline.label, median: medianOf(baselineRuns), rounds: baselineRuns },
    target: { label: scenario.target.label, median: target, rounds: targetRuns },
    ratio,
    ratioGoal,
    goal,
    perCore,
    met: ratioMet && p99Met && perCoreMet && target.errors === 0
  }
}

/**
 * Restarts, spawn to listening: the service on an existing store (its key
 * already made), and hello-world, the floor that Node and Fastify set.
 */
async function measureStarts (): Promise<{ service: number, helloWorld: number }> {
  const file = databaseFile('header')
  if (!services.has('header')) await seedStore(file, smallUsers)
  const service: number[] = []
  const helloWorld: number[] = []
  for (let start = 0; start < (quick ? 2 : 5); start++) {
    for (const [times, starting] of [[service, startService({ variant: 'header', databaseFile: file })], [helloWorld, startHelloWorld()]] as const) {
      const running = await starting
      times.push(running.readyMs)
      await running.stop()
    }
  }
  return { service: median(service), helloWorld: median(helloWorld) }
}

function log (line: string) {
  process.stderr.write(`${line}\n`)
}

const results: ScenarioResult[] = []
let processResult: ProcessResult | undefined
try {
  for (const scenario of scenarios.filter(({ id }) => wanted(id))) results.push(await runScenario(scenario))
  if (wanted('process')) {
    const rssMb: Record<string, number> = {}
    for (const [name, service] of services) rssMb[name] = (await service).running.rssMb()
    const starts = await measureStarts()
    processResult = { startToReadyMs: starts.service, helloWorldStartToReadyMs: starts.helloWorld, rssMb }
  }
} finally {
  for (const running of started) await running.stop()
  rmSync(workDir, { recursive: true, force: true })
}

const fastifyVersion = (createRequire(import.meta.url)('fastify/package.json') as { version: string }).version
const report: Results = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version, fastify: fastifyVersion, threadpool: process.env.UV_THREADPOOL_SIZE ?? '4 (default)' },
  settings: { connections: CONNECTIONS, ...timing, rounds, smallUsers, bigUsers, quick },
  scenarios: results,
  process: processResult
}
const markdown = toMarkdown(report)
process.stdout.write(markdown)
mkdirSync(outDir, { recursive: true })
writeFileSync(join(outDir, 'latest.md'), markdown)
writeFileSync(join(outDir, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
writeFileSync(join(outDir, 'ratios.svg'), toSvg(report))

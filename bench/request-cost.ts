import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { changeBuild } from './builds.js'
import { freePort, startOf } from './processes.js'
import { logIn, signUpOnce, spreadUsers } from './load.js'
import { CLIENT_CREDENTIALS_BODY, codeExchangeBody, FORM, OAuthBrowser, offlineTokensOf, seedOAuthClients } from './oauth.js'
import { OAUTH_GRANTS } from './scenarios.js'
import { seedStore } from './seed.js'

/*
 * node --import tsx bench/request-cost.ts (after npm run build): the service's CPU time per request of
 * GET /oauth/userinfo with an app's JWT access token against GET /users/:id of the same users (issue 34:
 * the same work, a token check and a user read), of the authorization_code exchange (COST_CODE=1: the bench's
 * oauth-code row, codes minted before each window and only the exchanges counted), and of a Fastify
 * hello-world, in the same alternating
 * rounds. The service runs as `npm start` runs it (package.json config.nodeFlags and config.processEnv), autocannon sends from
 * this process over 127.0.0.1, and each process's CPU is its own process.cpuUsage() before and after a
 * window (bench/cpu-hook.mjs), over the answers counted in it. On a shared machine the rates move with
 * the others' load; the CPU a request costs moves far less, and the ratios of one round less still.
 *
 * COST_BUILDS: builds to compare in the same rounds, `label=path/to/dist/src/server.js,...` (default: this
 * tree's dist); COST_ROUNDS (7), COST_SECONDS (2 per window), COST_CONNECTIONS (50);
 * COST_CODE=1: the code exchange row, COST_CODES codes a window (1500); COST_LATENCY=1: each window's latencies, and the CPU
 * an authorization request (the minting of a code) costs. The main thread's CPU (the event loop's) is given beside the process's.
 * COST_CC=1: the client-credentials row. With either token row, the signing floor (bench/signing-floor.mjs) runs in the
 * rounds too, and each token row's share of it is given (the floor's main-thread CPU over the row's).
 * COST_PROFILE=userinfo|users|code|cc|hello: after the rounds, one more window of that row on each build under
 * V8's profiler (that window alone), written to bench/profiles/<label>-<row>.cpuprofile.
 */
const USERS = 1000
const rounds = Number(process.env.COST_ROUNDS ?? 7)
const seconds = Number(process.env.COST_SECONDS ?? 2)
const connections = Number(process.env.COST_CONNECTIONS ?? 50)
const profileRow = process.env.COST_PROFILE
const withCode = process.env.COST_CODE === '1' || profileRow === 'code'
const withClientCredentials = process.env.COST_CC === '1' || profileRow === 'cc'
/** Codes exchanged in one window of the code row (minted before it, outside the counted CPU). */
const CODES_PER_WINDOW = Number(process.env.COST_CODES ?? 1500)
const root = fileURLToPath(new URL('..', import.meta.url))
const CPU_HOOK = fileURLToPath(new URL('./cpu-hook.mjs', import.meta.url))
const READY_SIGNAL = fileURLToPath(new URL('./ready-signal.mjs', import.meta.url))

interface Probe { child: ChildProcess, url: string }

/** The next message of `child` that carries `key`: its value. */
function answerOf<T> (child: ChildProcess, key: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const take = (answer: Record<string, unknown>) => {
      if (typeof answer !== 'object' || answer === null || !(key in answer)) return
      child.off('message', take)
      child.off('exit', exited)
      resolve(answer[key] as T)
    }
    const exited = (code: number | null) => { reject(new Error(`the process exited (${code}) before answering ${key}`)) }
    child.on('message', take)
    child.once('exit', exited)
  })
}

async function ask<T> (child: ChildProcess, message: unknown, key: string): Promise<T> {
  const answer = answerOf<T>(child, key)
  child.send(message as string)
  return await answer
}

const children: ChildProcess[] = []
process.on('exit', () => { for (const child of children) child.kill('SIGKILL') })

async function start (args: string[], env: Record<string, string>, port?: number): Promise<Probe> {
  const child = spawn(process.execPath, ['--import', CPU_HOOK, '--import', READY_SIGNAL, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  children.push(child)
  const listening = await answerOf<number>(child, 'port')
  return { child, url: `http://127.0.0.1:${port ?? listening}` }
}

interface Row {
  name: 'users' | 'userinfo' | 'code' | 'cc' | 'hello' | 'floor'
  probe: Probe
  requests: autocannon.Request[]
  /** A counted row's single-use request bodies, made before each window: `amount` of them, for `requests[0]`. */
  counted?: (amount: number) => Promise<string[]>
}
interface Build { label: string, users: Row, userinfo: Row, code?: Row, cc?: Row }

async function startBuild (label: string, entry: string, dir: string): Promise<Build> {
  const file = join(dir, `${label}.db`)
  // The build's own store code, where the build is another tree's (its dist beside its sources).
  const code = entry === changeBuild.entry
    ? await changeBuild.storeCode()
    : await (async () => {
      const dist = resolve(entry, '..', '..')
      const [{ openSqliteStore }, { newClient }] = await Promise.all([import(pathToFileURL(join(dist, 'db', 'sqlite', 'store.js')).href), import(pathToFileURL(join(dist, 'core', 'oauth', 'clients.js')).href)])
      return { openSqliteStore, newClient }
    })()
  await seedStore(file, USERS, code)
  const clients = await seedOAuthClients(file, code)
  const port = await freePort()
  const { flags, environment } = startOf(entry)
  const probe = await start([...flags, entry], { ...environment, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), PUBLIC_URL: `http://localhost:${port}`, API_VARIANT: 'header', DATABASE_URL: file, RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'warn', PASSWORD_HASH_TARGET: '0ms' }, port)
  await signUpOnce(probe.url, 'header')
  // The same users for both rows: each reads its own record with its session's token, and its userinfo with its app's.
  const indexes = spreadUsers(OAUTH_GRANTS, USERS)
  const [sessions, tokens] = [await logIn(probe.url, indexes), await offlineTokensOf(probe.url, clients.app, indexes)]
  const browser = new OAuthBrowser(probe.url, clients.app)
  return {
    label,
    code: withCode
      ? {
          name: 'code',
          probe,
          requests: [{ method: 'POST', path: '/oauth/token', headers: { ...FORM, authorization: clients.app.basic } }],
          counted: async (amount) => (await browser.codes(amount)).map(codeExchangeBody)
        }
      : undefined,
    cc: withClientCredentials
      ? { name: 'cc', probe, requests: [{ method: 'POST', path: '/oauth/token', headers: { ...FORM, authorization: clients.machine.basic }, body: CLIENT_CREDENTIALS_BODY }] }
      : undefined,
    users: { name: 'users', probe, requests: sessions.map((session) => ({ method: 'GET', path: `/users/${session.userId}`, headers: { authorization: `Bearer ${session.accessToken}` } })) },
    userinfo: { name: 'userinfo', probe, requests: tokens.map((token) => ({ method: 'GET', path: '/oauth/userinfo', headers: { authorization: `Bearer ${token.access_token}` } })) }
  }
}

/** A window's figures: CPU per request of the whole process and of its main thread (the event loop's, where known). */
interface Window { cpuPerRequest: number, systemPerRequest: number, mainPerRequest: number, perSecond: number, errors: number }

/** One timed window of `row`; with `profile`, under V8's profiler (the window alone), written to that file. */
async function window (row: Row, duration = seconds, profile?: string): Promise<Window> {
  const cpu = async () => await ask<{ cpu: number, system: number, main?: number }>(row.probe.child, 'cpu', 'usage')
  // A counted row sends each of its single-use bodies once. As in the bench, a request autocannon builds and never
  // sends (one a connection) may find the pool empty: it would be refused, were it sent.
  const minting = row.counted === undefined ? undefined : await cpu()
  const pool = await row.counted?.(CODES_PER_WINDOW)
  if (minting !== undefined && pool !== undefined && process.env.COST_LATENCY === '1') {
    const minted = await cpu()
    console.log(`${row.name}: minting ${pool.length} took ${((minted.cpu - minting.cpu) / pool.length).toFixed(0)} µs of CPU each (main thread ${((Number(minted.main) - Number(minting.main)) / pool.length).toFixed(0)})`)
  }
  const load = pool === undefined
    ? { duration, requests: row.requests }
    : { amount: pool.length, sampleInt: 10, requests: [{ ...row.requests[0], setupRequest: (request: autocannon.Request) => ({ ...request, body: pool.pop() ?? 'spent' }) }] }
  if (profile !== undefined) await ask(row.probe.child, 'profile-start', 'profiling')
  const before = await cpu()
  const started = performance.now()
  const result = await autocannon({ url: row.probe.url, connections, timeout: 10, ...load })
  const elapsed = (performance.now() - started) / 1000
  const after = await cpu()
  if (profile !== undefined) await ask(row.probe.child, { profileStop: profile }, 'profiled')
  const answered = result.requests.total
  if (process.env.COST_LATENCY === '1') console.log(`${row.name}: p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms, ${answered} answered in ${elapsed.toFixed(2)} s`)
  return {
    cpuPerRequest: (after.cpu - before.cpu) / answered,
    systemPerRequest: (after.system - before.system) / answered,
    mainPerRequest: after.main === undefined || before.main === undefined ? NaN : (after.main - before.main) / answered,
    perSecond: answered / (pool === undefined ? duration : elapsed),
    errors: result.errors + result.non2xx
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[(values.length - 1) >> 1]

const dir = mkdtempSync(join(tmpdir(), 'request-cost-'))
try {
  const specs = (process.env.COST_BUILDS ?? `change=${changeBuild.entry}`).split(',').map((spec) => {
    const [label, path] = spec.split('=')
    return { label, entry: isAbsolute(path) ? path : resolve(root, path) }
  })
  const builds: Build[] = []
  for (const { label, entry } of specs) builds.push(await startBuild(label, entry, dir))
  const hello: Row = { name: 'hello', probe: await start([fileURLToPath(new URL('./hello-world.mjs', import.meta.url))], {}), requests: [{ method: 'GET', path: '/' }] }
  const keyOf = (build: Build | undefined, row: Row) => `${build?.label ?? ''}:${row.name}`
  // The signing floor (hello-world signing one EdDSA token a request), against which the token rows' goals are set.
  const floor: Row | undefined = withCode || withClientCredentials
    ? { name: 'floor', probe: await start([fileURLToPath(new URL('./signing-floor.mjs', import.meta.url))], {}), requests: [{ method: 'POST', path: '/' }] }
    : undefined
  const tokenRows = (build: Build) => [build.code, build.cc].filter((row) => row !== undefined)
  const all: Array<{ build?: Build, row: Row }> = [
    ...builds.flatMap((build) => [build.users, build.userinfo, ...tokenRows(build)].map((row) => ({ build, row }))),
    { row: hello },
    ...(floor === undefined ? [] : [{ row: floor }])
  ]
  // A warm-up of every row (the JIT, the caches: the users', the verified tokens', the grants').
  for (const { row } of all) await window(row)
  const windows = new Map<string, Window[]>()
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? all : [...all].reverse()
    for (const { build, row } of order) {
      const measured = await window(row)
      const key = keyOf(build, row)
      windows.set(key, [...(windows.get(key) ?? []), measured])
    }
    const line = all.map(({ build, row }) => `${keyOf(build, row)} ${windows.get(keyOf(build, row))?.at(-1)?.cpuPerRequest.toFixed(1)} µs`).join(', ')
    console.log(`round ${round + 1}: ${line}`)
  }
  const hellos = windows.get(keyOf(undefined, hello)) ?? []
  console.log(`\nmedians of ${rounds} rounds of ${seconds} s, ${connections} connections (CPU µs per request; ratios per round, then their median)`)
  for (const row of [hello, ...(floor === undefined ? [] : [floor])]) {
    const measured = windows.get(keyOf(undefined, row)) ?? []
    console.log(`${row.name === 'hello' ? 'hello-world' : 'the signing floor'}: ${median(measured.map((w) => w.cpuPerRequest)).toFixed(1)} µs (system ${median(measured.map((w) => w.systemPerRequest)).toFixed(1)}, main thread ${median(measured.map((w) => w.mainPerRequest)).toFixed(1)}), ${median(measured.map((w) => w.perSecond)).toFixed(0)} req/s`)
  }
  for (const build of builds) {
    const users = windows.get(keyOf(build, build.users)) ?? []
    const userinfo = windows.get(keyOf(build, build.userinfo)) ?? []
    const ratio = median(userinfo.map((w, index) => w.cpuPerRequest / users[index].cpuPerRequest))
    const ofHello = (row: Window[]) => median(row.map((w, index) => hellos[index].cpuPerRequest / w.cpuPerRequest))
    const errors = [...users, ...userinfo].reduce((sum, w) => sum + w.errors, 0)
    const system = (row: Window[]) => median(row.map((w) => w.systemPerRequest)).toFixed(1)
    console.log(`${build.label}: GET /users/:id ${median(users.map((w) => w.cpuPerRequest)).toFixed(1)} µs (system ${system(users)}, ${median(users.map((w) => w.perSecond)).toFixed(0)} req/s, hello's CPU share ${ofHello(users).toFixed(2)}); ` +
      `userinfo ${median(userinfo.map((w) => w.cpuPerRequest)).toFixed(1)} µs (system ${system(userinfo)}, ${median(userinfo.map((w) => w.perSecond)).toFixed(0)} req/s, hello's CPU share ${ofHello(userinfo).toFixed(2)}); ` +
      `userinfo / users ${ratio.toFixed(2)}${errors > 0 ? `; ${errors} errors` : ''}`)
    for (const row of tokenRows(build)) {
      const measured = windows.get(keyOf(build, row)) ?? []
      const rowErrors = measured.reduce((sum, w) => sum + w.errors, 0)
      const floors = floor === undefined ? [] : windows.get(keyOf(undefined, floor)) ?? []
      // The bench's goals are shares of the floor's throughput; on the event loop's CPU that is the floor's main-thread CPU over the row's.
      const ofFloor = median(measured.map((w, index) => floors[index].mainPerRequest / w.mainPerRequest))
      console.log(`${build.label}: ${row.name === 'code' ? 'code exchange' : 'client credentials'} ${median(measured.map((w) => w.cpuPerRequest)).toFixed(1)} µs (system ${system(measured)}, main thread ${median(measured.map((w) => w.mainPerRequest)).toFixed(0)}, ${median(measured.map((w) => w.perSecond)).toFixed(0)} req/s, hello's CPU share ${ofHello(measured).toFixed(3)}, the floor's main-thread share ${ofFloor.toFixed(2)})${rowErrors > 0 ? `; ${rowErrors} errors` : ''}`)
    }
  }
  if (profileRow !== undefined) {
    const folder = join(root, 'bench', 'profiles')
    mkdirSync(folder, { recursive: true })
    for (const build of profileRow === 'hello' ? [undefined] : builds) {
      const row = build === undefined ? hello : profileRow === 'users' ? build.users : profileRow === 'code' && build.code !== undefined ? build.code : profileRow === 'cc' && build.cc !== undefined ? build.cc : build.userinfo
      const file = join(folder, `${build?.label ?? 'hello'}-${row.name}.cpuprofile`)
      const measured = await window(row, Math.max(seconds, 6), file)
      console.log(`profile of ${keyOf(build, row)} (${Math.round(measured.perSecond * Math.max(seconds, 6))} requests, ${measured.cpuPerRequest.toFixed(1)} µs a request under the profiler): ${file}`)
    }
  }
} finally {
  for (const child of children) {
    child.kill('SIGTERM')
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
  }
  rmSync(dir, { recursive: true, force: true })
}

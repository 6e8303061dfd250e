/*
 * Soak: mixed traffic against the real built server for a bounded time, then
 * a report of unexpected answers (must be 0) and the server's resident memory
 * at start, peak and end. Exits 1 when any request went wrong.
 *
 *   npm run soak                                   # 3 minutes, cookie variant, 8 connections
 *   SOAK_DURATION=30s SOAK_CONNECTIONS=4 npm run soak
 *   SOAK_VARIANT=header npm run soak
 *
 * Each connection loops over a user's whole life: register, log in, read,
 * refresh, update (cookie variant) or auth-me (header variant), read again,
 * refresh, log out. Rate limits are off (RATE_LIMIT_ENABLED=false), as the
 * contract allows for load tests only.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon, { type Request } from 'autocannon'
import { parseDurationSeconds } from '../core/duration.js'
import { freePort } from './processes.js'

const DURATION_SECONDS = parseDurationSeconds(process.env.SOAK_DURATION ?? '3m')
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 8)
const VARIANT = process.env.SOAK_VARIANT === 'header' ? 'header' : 'cookie'
const SERVER_ENTRY = fileURLToPath(new URL('../dist/src/server.js', import.meta.url))
const PASSWORD = 'soak test password'

interface Context {
  id?: number
  email?: string
  accessToken?: string
  refreshToken?: string
}

/** Resident set size of a process in MiB, from /proc (Linux). */
function rssMiB (pid: number): number {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return kib === null ? Number.NaN : Number(kib[1]) / 1024
}

function cookie (headers: Record<string, string | string[]>, name: string): string | undefined {
  const lines = [headers['set-cookie'] ?? headers['Set-Cookie'] ?? []].flat()
  for (const line of lines) {
    const [pair] = line.split(';')
    if (pair.startsWith(`${name}=`)) return pair.slice(name.length + 1)
  }
  return undefined
}

/** Answers that are not the one expected, by request name and status. */
const unexpected = new Map<string, number>()
const answered = new Map<string, number>()

/** One step of the sequence: the request, the status it must get, and what to keep from the answer. */
function step (name: string, expected: number, build: (context: Context) => Omit<Request, 'onResponse' | 'setupRequest'>, keep?: (context: Context, body: string, headers: Record<string, string | string[]>) => void): Request {
  return {
    setupRequest: (request, context) => ({ ...request, ...build(context as Context) }),
    onResponse: (status, body, context, headers) => {
      answered.set(name, (answered.get(name) ?? 0) + 1)
      if (status !== expected) {
        const key = `${name} ${status}`
        unexpected.set(key, (unexpected.get(key) ?? 0) + 1)
        if ((unexpected.get(key) ?? 0) <= 3) console.error(`unexpected: ${key} ${body.slice(0, 200)}`)
        return
      }
      keep?.(context as Context, body, headers as Record<string, string | string[]>)
    }
  }
}

let registered = 0
const json = { 'content-type': 'application/json' }

function sequence (): Request[] {
  const auth = (context: Context): Record<string, string> => VARIANT === 'header'
    ? { authorization: `Bearer ${context.accessToken}`, 'x-refresh-token': `Bearer ${context.refreshToken}` }
    : { cookie: `accessToken=${context.accessToken}; refreshToken=${context.refreshToken}` }
  const keepTokens = (context: Context, body: string, headers: Record<string, string | string[]>) => {
    context.accessToken = JSON.parse(body).accessToken
    context.refreshToken = VARIANT === 'header' ? JSON.parse(body).refreshToken ?? context.refreshToken : cookie(headers, 'refreshToken') ?? context.refreshToken
  }
  const read = step('read', 200, context => ({ method: 'GET', path: `/users/${context.id}`, headers: auth(context) }))
  const refresh = step('refresh', 200, context => ({ method: 'POST', path: '/auth/refresh-token', headers: auth(context) }), keepTokens)
  const variantStep = VARIANT === 'cookie'
    ? step('patch', 204, context => ({ method: 'PATCH', path: `/users/${context.id}`, headers: { ...json, ...auth(context) }, body: JSON.stringify({ first_name: `Soaked ${Date.now()}` }) }))
    : step('auth-me', 200, context => ({ method: 'POST', path: '/auth/auth-me', headers: auth(context) }), keepTokens)

  return [
    step('register', 201, (context) => {
      registered += 1
      context.email = `soak-${process.pid}-${registered}@example.com`
      const body = { first_name: 'Soak', last_name: 'Test', email: context.email, password: PASSWORD, ...(VARIANT === 'cookie' ? { username: `soak_${registered}` } : {}) }
      return { method: 'POST', path: '/auth/register', headers: json, body: JSON.stringify(body) }
    }, (context, body) => { context.id = JSON.parse(body).id }),
    step('login', 200, context => ({ method: 'POST', path: '/auth/login', headers: json, body: JSON.stringify({ email: context.email, password: PASSWORD }) }), keepTokens),
    read,
    refresh,
    variantStep,
    read,
    refresh,
    read,
    step('logout', 204, context => ({ method: 'POST', path: '/auth/logout', headers: auth(context) }))
  ]
}

async function main () {
  const folder = mkdtempSync(join(tmpdir(), 'account-soak-'))
  const port = await freePort()
  const server = spawn(process.execPath, [SERVER_ENTRY], {
    env: { PATH: process.env.PATH, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), API_VARIANT: VARIANT, DATABASE_URL: join(folder, 'accounts.db'), RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  const stop = () => {
    if (server.exitCode === null) server.kill('SIGTERM')
    rmSync(folder, { recursive: true, force: true })
  }
  try {
    const url = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 15_000
    for (;;) {
      const healthy = await fetch(`${url}/health`).then(response => response.ok, () => false)
      if (healthy) break
      if (Date.now() > deadline || server.exitCode !== null) throw new Error('the server did not start')
      await new Promise(resolve => setTimeout(resolve, 100))
    }

    const rssStart = rssMiB(server.pid as number)
    let rssPeak = rssStart
    // Warm: once the pools (argon2's memory, statement caches, JIT) have filled, a tenth into the run.
    let rssWarm = Number.NaN
    const warmAt = Date.now() + DURATION_SECONDS * 100
    const sampler = setInterval(() => {
      const rss = rssMiB(server.pid as number)
      rssPeak = Math.max(rssPeak, rss)
      if (Number.isNaN(rssWarm) && Date.now() >= warmAt) rssWarm = rss
    }, 1000)
    console.log(`soak: ${VARIANT} variant, ${CONNECTIONS} connections, ${DURATION_SECONDS} s, server pid ${server.pid}, RSS at start ${rssStart.toFixed(1)} MiB`)

    const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_SECONDS, requests: sequence(), timeout: 10 })
    clearInterval(sampler)
    const rssEnd = rssMiB(server.pid as number)
    rssPeak = Math.max(rssPeak, rssEnd)

    const wrong = [...unexpected.values()].reduce((sum, count) => sum + count, 0)
    const errors = wrong + result.errors + result.timeouts
    console.log(`requests: ${result.requests.total} in ${result.duration.toFixed(0)} s (${result.requests.average.toFixed(0)} req/s mean), latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`)
    console.log(`answered: ${[...answered].map(([name, count]) => `${name} ${count}`).join(', ')}; users registered: ${answered.get('register') ?? 0}`)
    console.log(`errors: ${errors} (unexpected statuses ${wrong}${wrong > 0 ? `: ${[...unexpected].map(([key, count]) => `${key} ×${count}`).join(', ')}` : ''}; connection errors ${result.errors}; timeouts ${result.timeouts})`)
    const growth = rssEnd - rssWarm
    console.log(`RSS: start (idle) ${rssStart.toFixed(1)} MiB, warm (${Math.round(DURATION_SECONDS / 10)} s in) ${rssWarm.toFixed(1)} MiB, peak ${rssPeak.toFixed(1)} MiB, end ${rssEnd.toFixed(1)} MiB (end − warm: ${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MiB)`)
    if (server.exitCode !== null) throw new Error(`the server exited during the soak (code ${server.exitCode})`)
    process.exitCode = errors === 0 ? 0 : 1
  } finally {
    stop()
  }
}

await main()

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { changeBuild } from './builds.js'
import { freePort, startOf } from './processes.js'
import { signUpOnce, spreadUsers } from './load.js'
import { CLIENT_CREDENTIALS_BODY, codeExchangeBody, exchange, OAuthBrowser, offlineTokensOf, refreshBody, seedOAuthClients } from './oauth.js'
import { OAUTH_GRANTS } from './scenarios.js'
import { seedStore } from './seed.js'

/*
 * node --import tsx bench/rss-probe.ts (after npm run build): where the service's memory goes on the OAuth
 * rows' flows, without the bench's full load (issue 34). It starts dist/src/server.js as `npm start` does
 * (package.json config.nodeFlags, or PROBE_FLAGS, and config.processEnv), runs the flows of oauth-code, oauth-refresh,
 * oauth-client-credentials and oauth-userinfo in turn at PROBE_CONCURRENCY requests in flight (50, the
 * bench's connections), PROBE_REQUESTS each (1500; userinfo three times that), and prints after each the
 * resident memory (VmRSS, its anonymous part), the threads, and V8's heap by space. The same script at the
 * same moments is what compares two builds or flags; its figures sit below the bench's, which sends more.
 * PROBE_ENTRY: another build's dist/src/server.js (its store seeded by this tree's code); PROBE_SNAPSHOT: a path
 * where a V8 heap snapshot of the service is written after the last flow; a MALLOC_ setting (MALLOC_ARENA_MAX, say) is handed to the service;
 * PROBE_IDLE_SECONDS: the report again every 5 s of that long without requests after the flows.
 */
const USERS = 1000
const entry = process.env.PROBE_ENTRY ?? changeBuild.entry
const start = startOf(entry)
const flags = process.env.PROBE_FLAGS?.split(' ').filter((flag) => flag !== '') ?? start.flags
const inFlight = Number(process.env.PROBE_CONCURRENCY ?? 50)
const requests = Number(process.env.PROBE_REQUESTS ?? 1500)

const dir = mkdtempSync(join(tmpdir(), 'rss-probe-'))
const file = join(dir, 'probe.db')
const code = await changeBuild.storeCode()
await seedStore(file, USERS, code)
const clients = await seedOAuthClients(file, code)
// The service's own address is its issuer and its tokens' audience: a port known before it listens.
const port = await freePort()
const service = spawn(process.execPath, [
  ...flags,
  '--import', fileURLToPath(new URL('./memory-hook.mjs', import.meta.url)),
  '--import', fileURLToPath(new URL('./ready-signal.mjs', import.meta.url)),
  entry
], {
  // The environment `npm start` sets (config.processEnv), and any MALLOC_ setting of this process's over it.
  env: { PATH: process.env.PATH, ...start.environment, ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('MALLOC_'))), NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), PUBLIC_URL: `http://localhost:${port}`, API_VARIANT: 'header', DATABASE_URL: file, RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'error', PASSWORD_HASH_TARGET: '0ms' },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc']
})
process.on('exit', () => service.kill('SIGKILL'))

await once(service, 'message')
const url = `http://127.0.0.1:${port}`
const pid = service.pid as number

interface Memory { heapTotal: number, heapUsed: number, external: number, spaces: Record<string, number> }

/** Sends the service (bench/memory-hook.mjs) a request and waits for the message that carries `field`. */
async function ask<T> (request: string | object, field: string): Promise<T> {
  const answer = new Promise<T>((resolve) => {
    const take = (message: Record<string, unknown>) => {
      if (message[field] === undefined) return
      service.off('message', take)
      resolve(message[field] as T)
    }
    service.on('message', take)
  })
  service.send(request)
  return await answer
}

async function report (moment: string): Promise<void> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (text: string, name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1])
  const memory = await ask<Memory>('memory', 'memory')
  const mb = (bytes: number) => (bytes / 1048576).toFixed(1)
  const kb = (kilobytes: number) => (kilobytes / 1024).toFixed(1)
  console.log(`${moment.padEnd(24)} RSS ${kb(field(status, 'VmRSS'))} MB (anonymous ${kb(field(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Anonymous'))}), ` +
    `${field(status, 'Threads')} threads | V8 heap ${mb(memory.heapTotal)} (used ${mb(memory.heapUsed)}; new ${mb(memory.spaces.new_space)}, ` +
    `old ${mb(memory.spaces.old_space)}, code ${mb(memory.spaces.code_space)}), external ${mb(memory.external)}`)
}

/** `count` calls of `call`, `inFlight` at a time. */
async function inTurn (count: number, call: (index: number) => Promise<unknown>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < count) await call(next++)
  }))
}

try {
  await report('started')
  await signUpOnce(url, 'header')
  await report('after a sign-up')
  const browser = new OAuthBrowser(url, clients.app)
  for (let batch = 0; batch < 3; batch++) {
    const codes = await browser.codes(Math.round(requests / 3))
    await inTurn(codes.length, async (index) => await exchange(url, clients.app, codeExchangeBody(codes[index])))
  }
  await report('after oauth-code')
  const tokens = await offlineTokensOf(url, clients.app, spreadUsers(OAUTH_GRANTS, USERS))
  await inTurn(requests, async (index) => await exchange(url, clients.app, refreshBody(tokens[index % tokens.length].refresh_token)))
  await report('after oauth-refresh')
  await inTurn(requests, async () => await exchange(url, clients.machine, CLIENT_CREDENTIALS_BODY))
  await report('after client-credentials')
  await inTurn(3 * requests, async (index) => {
    const response = await fetch(`${url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens[index % tokens.length].access_token}` } })
    if (response.status !== 200) throw new Error(`userinfo answered ${response.status}`)
    await response.arrayBuffer()
  })
  await report('after oauth-userinfo')
  // PROBE_IDLE_SECONDS: the same report again after that long without requests (what V8 and the hashing threads give back idle).
  const idle = Number(process.env.PROBE_IDLE_SECONDS ?? 0)
  for (let waited = 0; waited < idle; waited += 5) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(5, idle - waited) * 1000))
    await report(`idle ${Math.min(waited + 5, idle)} s`)
  }
  if (process.env.PROBE_SNAPSHOT !== undefined) {
    console.log(`heap snapshot: ${await ask<string>({ snapshot: process.env.PROBE_SNAPSHOT }, 'snapshot')}`)
  }
} finally {
  service.kill('SIGTERM')
  await once(service, 'exit')
  rmSync(dir, { recursive: true })
}

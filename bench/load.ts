import autocannon from 'autocannon'
import { BENCH_PASSWORD, seededUser } from './seed.js'

export const CONNECTIONS = 50

export interface Measurement {
  requestsPerSecond: number
  p50: number
  p99: number
  /** Connection errors, timeouts and answers other than 2xx. */
  errors: number
  /** A second load run at the same time (the logins beside the reads), what it got: shows what the first one's figure cost it. */
  alongside?: { label: string, requestsPerSecond: number, p99: number }
}

export interface Timing {
  warmupSeconds: number
  seconds: number
}

export interface Load {
  url: string
  requests: autocannon.Request[]
  connections?: number
}

/**
 * One autocannon run: a warm-up whose figures are dropped, then the timed
 * window. `load` is asked anew for each, so that a load can start from fresh
 * sessions.
 */
export async function measure (load: () => Load | Promise<Load>, timing: Timing): Promise<Measurement> {
  await run(await load(), timing.warmupSeconds)
  return await run(await load(), timing.seconds)
}

async function run ({ url, requests, connections = CONNECTIONS }: Load, seconds: number): Promise<Measurement> {
  const result = await autocannon({ url, connections, duration: seconds, requests, timeout: 10 })
  return {
    requestsPerSecond: result.requests.total / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx
  }
}

/** A load of exactly `amount` requests, each spending a single-use credential minted for it beforehand. */
export interface CountedLoad extends Load {
  amount: number
}

interface CountedRun extends Measurement {
  completed: number
  seconds: number
}

/** One autocannon run of `amount` requests, timed from its first request to its last answer. */
async function runCounted ({ url, requests, connections = CONNECTIONS, amount }: CountedLoad): Promise<CountedRun> {
  // autocannon notices that the last request is answered only at its next sample tick (every second by
  // default), and its duration counts to that tick: a batch answered in 0.3 s counted as 1 s, which capped
  // the code exchange's figure near 1,000 req/s whatever the build (issue 34). Ticks of 10 ms end the run
  // within 10 ms of its last answer.
  const result = await autocannon({ url, connections: Math.min(connections, amount), amount, requests, timeout: 10, sampleInt: 10 })
  return {
    requestsPerSecond: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    completed: result.requests.total,
    seconds: result.duration
  }
}

/**
 * For requests that spend what they send (authorization codes): `batch(n)` mints n credentials and
 * gives the load that spends them, and only the spending is timed. A warm-up batch of `warmup`
 * estimates the rate; the timed part is then about `timing.seconds` of requests at that rate, in
 * batches of at most `batchMax` (so that no credential outlives its time to live while the rest are
 * minted). Requests per second: all requests over the batches' summed durations; p50 the median
 * over the batches, p99 the worst batch's.
 */
export async function measureCounted (batch: (amount: number) => Promise<CountedLoad>, timing: Timing, { warmup, batchMax }: { warmup: number, batchMax: number }): Promise<Measurement> {
  const warm = await runCounted(await batch(warmup))
  const total = Math.max(warmup, Math.round(warm.requestsPerSecond * timing.seconds))
  const runs: CountedRun[] = []
  for (let done = 0; done < total;) {
    const amount = Math.min(batchMax, total - done)
    runs.push(await runCounted(await batch(amount)))
    done += amount
  }
  const p50s = runs.map((run) => run.p50).sort((a, b) => a - b)
  return {
    requestsPerSecond: runs.reduce((sum, run) => sum + run.completed, 0) / runs.reduce((sum, run) => sum + run.seconds, 0),
    p50: p50s[(p50s.length - 1) >> 1],
    p99: Math.max(...runs.map((run) => run.p99)),
    errors: runs.reduce((sum, run) => sum + run.errors, 0)
  }
}

/** A logged-in user: its id and the tokens of one session. */
export interface Session {
  userId: number
  accessToken: string
  refreshToken: string
}

/**
 * Logs in at most this many at once while setting up: the service answers 503 BUSY past
 * PASSWORD_HASH_QUEUE_MAX (64) waiting hashes, as it should to a client that floods it.
 */
const SETUP_LOGINS_AT_ONCE = 32

/** Logs the seeded users `indexes` in over HTTP, one session each. */
export async function logIn (url: string, indexes: number[]): Promise<Session[]> {
  const sessions: Session[] = []
  for (let start = 0; start < indexes.length; start += SETUP_LOGINS_AT_ONCE) {
    sessions.push(...await logInAtOnce(url, indexes.slice(start, start + SETUP_LOGINS_AT_ONCE)))
  }
  return sessions
}

async function logInAtOnce (url: string, indexes: number[]): Promise<Session[]> {
  return await Promise.all(indexes.map(async (index) => {
    const response = await fetch(`${url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: seededUser(index).email, password: BENCH_PASSWORD })
    })
    if (response.status !== 200) throw new Error(`bench login of user ${index} answered ${response.status}: ${await response.text()}`)
    const body = await response.json() as { user: { id: number }, accessToken: string, refreshToken?: string }
    const refreshToken = body.refreshToken ?? cookieValue(response.headers.getSetCookie(), 'refreshToken')
    if (refreshToken === undefined) throw new Error('bench login returned no refresh token')
    return { userId: body.user.id, accessToken: body.accessToken, refreshToken }
  }))
}

/**
 * Signs one new user up (in the service's own fresh store), as any service in use has done before it
 * is measured. The first sign-up is what, in a build without src/tick-object-shape.ts, left every
 * later request on one of V8's slow paths (nextTick at 9-10% of a GET): a bench that never signed
 * anyone up before its reads measured a state production leaves at its first sign-up, and only some
 * runs (issue 23's unsteady GETs).
 */
export async function signUpOnce (url: string, variant: 'header' | 'cookie'): Promise<void> {
  const fields = { first_name: 'First', last_name: 'Sign-up', email: 'first-sign-up@bench.example', password: BENCH_PASSWORD }
  const response = await fetch(`${url}/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(variant === 'cookie' ? { ...fields, username: 'first-sign-up' } : fields)
  })
  if (response.status !== 201) throw new Error(`bench sign-up answered ${response.status}: ${await response.text()}`)
}

/** `count` user indexes spread evenly over the `users` seeded ones. */
export function spreadUsers (count: number, users: number): number[] {
  return Array.from({ length: count }, (_, slot) => 1 + Math.floor(slot * (users - 1) / Math.max(count - 1, 1)))
}

export function cookieValue (setCookies: string | string[] | undefined, name: string): string | undefined {
  for (const line of [setCookies ?? []].flat()) {
    const [pair] = line.split(';')
    const separator = pair.indexOf('=')
    if (pair.slice(0, separator).trim() === name) return pair.slice(separator + 1)
  }
  return undefined
}

/**
 * Requests taking the sessions in turn (no state carried from one answer to the next): one request
 * a session, which every connection sends in turn. Each is built once. autocannon rebuilds a request
 * that has a setupRequest every time it sends it, and that cost is the load generator's, not the
 * service's. It capped the GET rows near 50,000 req/s (the service's CPU profile: 6.5 s busy of
 * 8.7 s, setup included), while hello-world's one static request did not.
 */
export function roundRobin (sessions: Session[], build: (session: Session) => Partial<autocannon.Request>): autocannon.Request[] {
  return sessions.map((session) => build(session))
}

/**
 * Requests that each take a session from a pool and give it back with the
 * token the answer rotated in, so that every virtual client carries its own
 * live refresh cookie. The pool holds more sessions than connections.
 */
export function rotatingRefresh (sessions: Session[], path: string): autocannon.Request[] {
  const idle = [...sessions]
  return [{
    method: 'POST',
    path,
    setupRequest: (request, context: { session?: Session }) => {
      const session = idle.pop()
      if (session === undefined) throw new Error('rotating refresh: the session pool ran dry')
      context.session = session
      return { ...request, headers: { cookie: `refreshToken=${session.refreshToken}` } }
    },
    onResponse: (status, _body, context: { session?: Session }, headers) => {
      const session = context.session as Session
      const rotated = cookieValue(headerValue(headers, 'set-cookie'), 'refreshToken')
      if (status === 200 && rotated !== undefined) session.refreshToken = rotated
      idle.unshift(session)
    }
  }]
}

function headerValue (headers: Record<string, string | string[] | undefined> | undefined, name: string): string | string[] | undefined {
  for (const [key, value] of Object.entries(headers ?? {})) if (key.toLowerCase() === name) return value
  return undefined
}

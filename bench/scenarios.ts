import type autocannon from 'autocannon'
import { CONNECTIONS, logIn, measure, rotatingRefresh, roundRobin, spreadUsers, type Measurement, type Session, type Timing } from './load.js'
import { measureHashRate, type Running } from './processes.js'
import { BENCH_PASSWORD, seededUser } from './seed.js'

/** A service under benchmark: `header` and `cookie` on the small store, `big` (header) on the big one. */
export type ServiceName = 'header' | 'cookie' | 'big'

export interface Service {
  running: Running
  users: number
  /** Sessions of CONNECTIONS users spread over the store, logged in once and reused. */
  sessions: () => Promise<Session[]>
}

export interface Bench {
  timing: Timing
  hello: () => Promise<Running>
  service: (name: ServiceName) => Promise<Service>
}

export interface Side {
  label: string
  measure: (bench: Bench) => Promise<Measurement>
}

export interface Scenario {
  id: string
  title: string
  baseline: Side
  target: Side
  /** `throughput`: target req/s over baseline req/s, the higher the better; `p99`: target p99 over baseline p99, the lower the better. */
  compare: 'throughput' | 'p99'
  goal: number
  /** A ceiling on the target's p99 latency in ms, where the issue sets one. */
  p99Below?: number
}

const json = { 'content-type': 'application/json' }

/**
 * Connections for the scenarios that hash (login, register): enough in flight
 * to keep every hashing thread busy. More would only queue (at 40 logins/s,
 * 50 connections wait over a second each) and leave a short window empty.
 */
const HASHING_CONNECTIONS = 8

const helloWorld: Side = {
  label: 'hello-world',
  measure: async (bench) => {
    const { url } = await bench.hello()
    return await measure(() => ({ url, requests: [{ method: 'GET', path: '/' }] }), bench.timing)
  }
}

function readUser (name: ServiceName, sessions: Session[]): autocannon.Request[] {
  return roundRobin(sessions, (session) => ({
    method: 'GET',
    path: `/users/${session.userId}`,
    headers: name === 'cookie' ? { cookie: `accessToken=${session.accessToken}` } : { authorization: `Bearer ${session.accessToken}` }
  }))
}

function reads (name: ServiceName, label: string): Side {
  return {
    label,
    measure: async (bench) => {
      const service = await bench.service(name)
      const requests = readUser(name, await service.sessions())
      return await measure(() => ({ url: service.running.url, requests }), bench.timing)
    }
  }
}

/** GET of the signed Token Status List a resource server polls (the cached JWT; re-signed at most once a second). */
function statusListReads (name: ServiceName, label: string): Side {
  return {
    label,
    measure: async (bench) => {
      const service = await bench.service(name)
      return await measure(() => ({ url: service.running.url, requests: [{ method: 'GET', path: '/statuslists/1' }] }), bench.timing)
    }
  }
}

function loginRequests (users: number): autocannon.Request[] {
  return [{
    method: 'POST',
    path: '/auth/login',
    headers: json,
    setupRequest: (request) => {
      const { email } = seededUser(1 + Math.floor(Math.random() * users))
      return { ...request, body: JSON.stringify({ email, password: BENCH_PASSWORD }) }
    }
  }]
}

function logins (name: ServiceName, label: string): Side {
  return {
    label,
    measure: async (bench) => {
      const service = await bench.service(name)
      return await measure(() => ({ url: service.running.url, requests: loginRequests(service.users), connections: HASHING_CONNECTIONS }), bench.timing)
    }
  }
}

let registered = 0
function registrations (name: ServiceName, label: string): Side {
  const run = `${process.pid}-${Date.now()}`
  return {
    label,
    measure: async (bench) => {
      const service = await bench.service(name)
      const requests: autocannon.Request[] = [{
        method: 'POST',
        path: '/auth/register',
        headers: json,
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({ first_name: 'New', last_name: 'User', email: `new-${run}-${++registered}@bench.example`, password: BENCH_PASSWORD })
        })
      }]
      return await measure(() => ({ url: service.running.url, requests, connections: HASHING_CONNECTIONS }), bench.timing)
    }
  }
}

export const scenarios: Scenario[] = [
  {
    id: 'get-user-a',
    title: 'GET /users/:id, variant A (Bearer)',
    baseline: helloWorld,
    target: reads('header', 'variant A'),
    compare: 'throughput',
    goal: 0.6,
    p99Below: 10
  },
  {
    id: 'get-user-b',
    title: 'GET /users/:id, variant B (cookie)',
    baseline: helloWorld,
    target: reads('cookie', 'variant B'),
    compare: 'throughput',
    goal: 0.6,
    p99Below: 10
  },
  {
    id: 'status-list',
    title: 'GET /statuslists/1 (the Token Status List, application/statuslist+jwt)',
    baseline: helloWorld,
    target: statusListReads('header', 'status list'),
    compare: 'throughput',
    goal: 0.5
  },
  {
    id: 'refresh-a',
    title: 'refresh, variant A (both headers: lookup + sign)',
    baseline: helloWorld,
    target: {
      label: 'variant A',
      measure: async (bench) => {
        const service = await bench.service('header')
        const requests = roundRobin(await service.sessions(), (session) => ({
          method: 'POST',
          path: '/auth/refresh-token',
          headers: { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
        }))
        return await measure(() => ({ url: service.running.url, requests }), bench.timing)
      }
    },
    compare: 'throughput',
    goal: 0.4
  },
  {
    id: 'refresh-b',
    title: 'refresh with rotation, variant B (read + write + sign)',
    baseline: helloWorld,
    target: {
      label: 'variant B',
      measure: async (bench) => {
        const service = await bench.service('cookie')
        // Fresh sessions for each run: a rotation in flight when a window closes takes its session's live token with it.
        return await measure(async () => ({
          url: service.running.url,
          requests: rotatingRefresh(await logIn(service.running.url, spreadUsers(2 * CONNECTIONS, service.users)), '/auth/refresh-token')
        }), bench.timing)
      }
    },
    compare: 'throughput',
    goal: 0.3
  },
  {
    id: 'login',
    title: 'login (Argon2id verify + session + sign)',
    baseline: {
      label: 'raw Argon2id hashes',
      measure: async ({ timing }) => {
        const perSecond = await measureHashRate(timing.warmupSeconds, timing.seconds, HASHING_CONNECTIONS)
        return { requestsPerSecond: perSecond, p50: Number.NaN, p99: Number.NaN, errors: 0 }
      }
    },
    target: logins('header', 'variant A'),
    compare: 'throughput',
    goal: 0.9
  },
  {
    id: 'reads-under-logins',
    title: `GET /users/:id p99 while ${HASHING_CONNECTIONS} clients log in`,
    baseline: reads('header', 'reads alone'),
    target: {
      label: 'reads + logins',
      measure: async (bench) => {
        const service = await bench.service('header')
        const requests = readUser('header', await service.sessions())
        const [read] = await Promise.all([
          measure(() => ({ url: service.running.url, requests }), bench.timing),
          measure(() => ({ url: service.running.url, requests: loginRequests(service.users), connections: HASHING_CONNECTIONS }), bench.timing)
        ])
        return read
      }
    },
    compare: 'p99',
    goal: 2
  },
  {
    id: 'store-read',
    title: 'big store: GET /users/:id',
    baseline: reads('header', 'small store'),
    target: reads('big', 'big store'),
    compare: 'throughput',
    goal: 0.9
  },
  {
    id: 'store-login',
    title: 'big store: login',
    baseline: logins('header', 'small store'),
    target: logins('big', 'big store'),
    compare: 'throughput',
    goal: 0.9
  },
  {
    id: 'store-register',
    title: 'big store: register',
    baseline: registrations('header', 'small store'),
    target: registrations('big', 'big store'),
    compare: 'throughput',
    goal: 0.9
  }
]

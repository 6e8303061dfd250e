import type autocannon from 'autocannon'
import { CONNECTIONS, logIn, measure, measureCounted, rotatingRefresh, roundRobin, spreadUsers, type Measurement, type Session, type Timing } from './load.js'
import { CLIENT_CREDENTIALS_BODY, codeExchangeBody, FORM, refreshBody, type AppTokens, type BenchClients, type OAuthBrowser } from './oauth.js'
import { measureHashRate, type Running } from './processes.js'
import { BENCH_PASSWORD, seededUser } from './seed.js'

/** A service under benchmark: `header` and `cookie` on the small store, `big` (header) on the big one. */
export type ServiceName = 'header' | 'cookie' | 'big'

export interface Service {
  running: Running
  users: number
  /** Sessions of CONNECTIONS users spread over the store, logged in once and reused. */
  sessions: () => Promise<Session[]>
  oauth: {
    /** The apps registered in its store. */
    clients: BenchClients
    /** A user signed in at the provider (one browser session), who authorizes the trusted app. */
    browser: OAuthBrowser
    /** Offline tokens of the trusted app, one grant each of OAUTH_GRANTS users spread over the store; made once and reused. */
    offlineTokens: () => Promise<Array<AppTokens & { refresh_token: string }>>
  }
}

export interface Bench {
  timing: Timing
  hello: () => Promise<Running>
  /** Hello-world that signs one access token a request: the floor of a refresh. */
  signingFloor: () => Promise<Running>
  service: (name: ServiceName) => Promise<Service>
}

export interface Side {
  label: string
  measure: (bench: Bench) => Promise<Measurement>
  /**
   * The side measures nothing of a build (hello-world, the raw hash rate, the signing floor): with a
   * base build in the run it is measured once a round for both; any other side is measured on each build.
   */
  shared?: boolean
}

export interface Scenario {
  id: string
  title: string
  baseline: Side
  target: Side
  /** `throughput`: target req/s over baseline req/s, the higher the better; `p99`: target p99 over baseline p99, the lower the better. */
  compare: 'throughput' | 'p99'
  /** The ratio's goal; none where no issue sets one (the scenario is then measured, not judged on its ratio). */
  goal?: number
  /**
   * The id of a row that does part of this one's work and nothing more (the signing floor, for a
   * refresh): its ratio bounds this one's, and the report gives this one's as a share of it.
   */
  boundedBy?: string
  /** The goal of this row's share of its bound's ratio (boundedBy), where an issue sets one. */
  boundedGoal?: number
  /** A ceiling on the target's p99 latency in ms, where the issue sets one. */
  p99Below?: number
  /**
   * Requests per second per core, for a scenario with a published reference. `cores`: what does the
   * work: the one event loop (`one`: the figure per core is the req/s), or every core (`all`: the
   * hashing threads, one per core, of a login; the req/s over the machine's cores).
   */
  perCore?: { goal: number, reference: string, cores: 'one' | 'all' }
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
  shared: true,
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

/** How many grants (users) the refresh and userinfo scenarios take their tokens from. */
export const OAUTH_GRANTS = 10

/** Requests of a client at the token endpoint, in HTTP Basic. */
function tokenRequest (client: { basic: string }, body: string): autocannon.Request {
  return { method: 'POST', path: '/oauth/token', headers: { ...FORM, authorization: client.basic }, body }
}

/**
 * The authorization_code exchange. Codes are single-use: each batch is minted first over HTTP (the
 * signed-in user's authorization requests, one redirect each), then spent, one per token request;
 * only the token requests are timed. A build of a request autocannon never sends (one per
 * connection) finds the pool empty and takes a code that would fail: sent, it would count as an error.
 */
const codeExchanges: Side = {
  label: 'oauth code',
  measure: async (bench) => {
    const service = await bench.service('header')
    const { browser, clients } = service.oauth
    return await measureCounted(async (amount) => {
      const codes = await browser.codes(amount)
      return {
        url: service.running.url,
        amount,
        requests: [{
          ...tokenRequest(clients.app, ''),
          setupRequest: (request) => ({ ...request, body: codeExchangeBody(codes.pop() ?? 'spent') })
        }]
      }
    }, bench.timing, { warmup: Math.round(500 * bench.timing.warmupSeconds), batchMax: 2000 })
  }
}

const refreshGrants: Side = {
  label: 'oauth refresh',
  measure: async (bench) => {
    const service = await bench.service('header')
    const { app } = service.oauth.clients
    const tokens = await service.oauth.offlineTokens()
    const requests = roundRobin(tokens.map((token) => ({ userId: 0, accessToken: token.access_token, refreshToken: token.refresh_token })),
      (session) => tokenRequest(app, refreshBody(session.refreshToken)))
    return await measure(() => ({ url: service.running.url, requests }), bench.timing)
  }
}

const clientCredentialsGrants: Side = {
  label: 'oauth client credentials',
  measure: async (bench) => {
    const service = await bench.service('header')
    const requests = [tokenRequest(service.oauth.clients.machine, CLIENT_CREDENTIALS_BODY)]
    return await measure(() => ({ url: service.running.url, requests }), bench.timing)
  }
}

const userinfoReads: Side = {
  label: 'oauth userinfo',
  measure: async (bench) => {
    const service = await bench.service('header')
    const tokens = await service.oauth.offlineTokens()
    const requests = roundRobin(tokens.map((token) => ({ userId: 0, accessToken: token.access_token, refreshToken: token.refresh_token })),
      (session) => ({ method: 'GET', path: '/oauth/userinfo', headers: { authorization: `Bearer ${session.accessToken}` } }))
    return await measure(() => ({ url: service.running.url, requests }), bench.timing)
  }
}

/**
 * Sessions of `indexes` users (new ones, not the shared `sessions()`), each with an organisation of its own made
 * active (issue 37): the access token carries `org: { id, slug, role }` and the session remembers it, so a refresh
 * reads the membership. Variant A: the answers' `accessToken` in the body.
 */
async function organisationSessions (url: string, indexes: number[]): Promise<Session[]> {
  const sessions = await logIn(url, indexes)
  return await Promise.all(sessions.map(async (session) => {
    const call = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const response = await fetch(`${url}${path}`, { method: 'POST', headers: { ...json, authorization: `Bearer ${session.accessToken}` }, body: JSON.stringify(body) })
      if (response.status !== 200 && response.status !== 201) throw new Error(`bench ${path} answered ${response.status}: ${await response.text()}`)
      return await response.json() as Record<string, unknown>
    }
    const org = await call('/orgs', { name: `Bench org ${session.userId}` })
    const { accessToken } = await call(`/orgs/${String(org.id)}/activate`, {})
    return { ...session, accessToken: accessToken as string }
  }))
}

function orgReads (label: string): Side {
  return {
    label,
    measure: async (bench) => {
      const service = await bench.service('header')
      const requests = readUser('header', await organisationSessions(service.running.url, spreadUsers(CONNECTIONS, service.users)))
      return await measure(() => ({ url: service.running.url, requests }), bench.timing)
    }
  }
}

/** Refreshes of variant A (both headers), of `sessions`. */
function headerRefreshes (label: string, sessionsOf: (service: Service) => Promise<Session[]>): Side {
  return {
    label,
    measure: async (bench) => {
      const service = await bench.service('header')
      const requests = roundRobin(await sessionsOf(service), (session) => ({
        method: 'POST',
        path: '/auth/refresh-token',
        headers: { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
      }))
      return await measure(() => ({ url: service.running.url, requests }), bench.timing)
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
    // No goal of its own: the refresh rows' ceiling, measured in the same rounds (a refresh signs
    // the same token and does more), so that what they miss by can be told from what signing costs.
    id: 'signing-floor',
    title: 'the floor of a refresh: hello-world that signs one EdDSA access token a request (fast-jwt, no store)',
    baseline: helloWorld,
    target: {
      label: 'signing floor',
      shared: true,
      measure: async (bench) => {
        const { url } = await bench.signingFloor()
        return await measure(() => ({ url, requests: [{ method: 'POST', path: '/' }] }), bench.timing)
      }
    },
    compare: 'throughput'
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
    goal: 0.4,
    boundedBy: 'signing-floor'
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
    goal: 0.3,
    boundedBy: 'signing-floor'
  },
  {
    // Issue 37: the active organisation rides in the access token; GET /users/:id reads nothing more for it.
    id: 'get-user-org',
    title: 'GET /users/:id, variant A, a token with an active organisation (org claim) against one without',
    baseline: reads('header', 'variant A, no org'),
    target: orgReads('variant A, org claim'),
    compare: 'throughput',
    goal: 0.9
  },
  {
    // Issue 37: a refresh of a session with an active organisation reads the membership in the refresh token's query.
    id: 'refresh-org',
    title: 'refresh, variant A, a session with an active organisation against one without',
    baseline: headerRefreshes('variant A, no org', async (service) => await service.sessions()),
    target: headerRefreshes('variant A, active org', async (service) => await organisationSessions(service.running.url, spreadUsers(CONNECTIONS, service.users))),
    compare: 'throughput',
    goal: 0.9
  },
  {
    id: 'login',
    title: 'login (Argon2id verify + session + sign)',
    baseline: {
      label: 'raw Argon2id hashes',
      shared: true,
      measure: async ({ timing }) => {
        const perSecond = await measureHashRate(timing.warmupSeconds, timing.seconds, HASHING_CONNECTIONS)
        return { requestsPerSecond: perSecond, p50: Number.NaN, p99: Number.NaN, errors: 0 }
      }
    },
    target: logins('header', 'variant A'),
    compare: 'throughput',
    goal: 0.9,
    perCore: { goal: 15, reference: 'Keycloak: 15 password logins/s per vCPU (its sizing guide)', cores: 'all' }
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
        const [read, login] = await Promise.all([
          measure(() => ({ url: service.running.url, requests }), bench.timing),
          measure(() => ({ url: service.running.url, requests: loginRequests(service.users), connections: HASHING_CONNECTIONS }), bench.timing)
        ])
        return { ...read, alongside: { label: 'logins', requestsPerSecond: login.requestsPerSecond, p99: login.p99 } }
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
  },
  {
    id: 'oauth-code',
    title: 'OAuth token endpoint: authorization_code exchange (PKCE, ID token + JWT access token)',
    baseline: helloWorld,
    target: codeExchanges,
    compare: 'throughput',
    // Issue 34: a quarter of the floor (the exchange signs two tokens and consumes a code).
    boundedBy: 'signing-floor',
    boundedGoal: 0.25
  },
  {
    id: 'oauth-refresh',
    title: 'OAuth token endpoint: refresh_token grant of a confidential client (no rotation)',
    baseline: helloWorld,
    target: refreshGrants,
    compare: 'throughput'
  },
  {
    id: 'oauth-client-credentials',
    title: 'OAuth token endpoint: client_credentials grant (HTTP Basic, JWT access token)',
    baseline: helloWorld,
    target: clientCredentialsGrants,
    compare: 'throughput',
    // Issue 34: 0.60 of the floor, which signs the same token and does nothing else.
    boundedBy: 'signing-floor',
    boundedGoal: 0.6,
    perCore: { goal: 1200, reference: 'Keycloak: 120 client credentials grants/s per vCPU (its published sizing)', cores: 'one' }
  },
  {
    id: 'oauth-userinfo',
    title: 'GET /oauth/userinfo with an app\'s JWT access token',
    baseline: helloWorld,
    target: userinfoReads,
    compare: 'throughput',
    // Issue 34: a token check and a user read, as GET /users/:id (0.60) is.
    goal: 0.4
  }
]

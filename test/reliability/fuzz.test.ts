import { createHmac } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import Fastify, { type FastifyInstance, type HTTPMethods, type LightMyRequestResponse } from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../src/app.js'
import type { Variant } from '../../core/config.js'
import { hashToken } from '../../core/tokens/random-token.js'
import { CHEAP_HASH_PARAMETERS, testConfig } from '../fixtures/build.js'
import { cookieValue, newUserBody } from '../fixtures/factories.js'
import { onPostgres, testDatabaseUrl } from '../fixtures/database.js'
import type { AccountStore } from '../../db/store.js'
import { requestTo, strayRequest, type FuzzRequest, type HeaderValue, type TokenKind } from './arbitraries.js'

/*
 * Property-based fuzzing of every route of both variants through inject:
 * whatever arrives, the answer is never a 5xx, every 4xx is the contract's
 * error shape, a refused request changes nothing in the store, no prototype is
 * polluted, and the service still works afterwards.
 *
 * FUZZ_RUNS: cases per route (default 25 on SQLite, 10 on PostgreSQL, whose
 * snapshots cost a round trip per read; the suite has more routes than when it was
 * 100); FUZZ_SEED replays a failing run.
 */
const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? (onPostgres ? 10 : 25))
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)

/** The routes the service must have; the fuzzer also covers any others the app registers. */
const EXPECTED_ROUTES: Record<Variant, string[]> = {
  header: ['POST /auth/register', 'POST /auth/login', 'POST /auth/refresh-token', 'POST /auth/auth-me', 'POST /auth/logout', 'GET /users/:userId', 'GET /.well-known/jwks.json', 'GET /health'],
  cookie: ['POST /auth/register', 'POST /auth/login', 'POST /auth/refresh-token', 'POST /auth/logout', 'GET /users/:userId', 'PATCH /users/:userId', 'GET /.well-known/jwks.json', 'GET /health']
}

const PASSWORD = 'fuzzing password'
let casesRun = 0
/** How the cases were answered, `status code` → count: shows what the generators reach. */
const outcomes = new Map<string, number>()

interface Account { id: number, accessToken: string, refreshToken: string }

/** The service, built as the tests build it, with its routes as the app itself declares them (onRoute). */
async function buildCollectingRoutes (t: Test, variant: Variant, databaseUrl: string) {
  const config = testConfig({ API_VARIANT: variant, DATABASE_URL: databaseUrl })
  const server = Fastify(serverOptions(config))
  const routes = new Map<string, { method: string, url: string }>()
  server.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.set(`${method} ${route.url}`, { method, url: route.url })
  })
  // Cheap hashes, as build(t) hashes: the refusals fuzzed here do not depend on the hash's cost.
  await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  await server.ready()
  t.teardown(() => server.close())
  return { server, routes: [...routes.values()] }
}

/**
 * Everything a refused request must leave as it was, read through the store so that
 * both backends are fuzzed: every user, the two accounts' live sessions and
 * refresh tokens (rotation, revocation), and the signing keys.
 */
async function storeSnapshot (store: AccountStore, accounts: Account[], now: Date): Promise<string> {
  const users = []
  let page = await store.listUsers({ limit: 500 })
  while (page.length > 0) {
    users.push(...page)
    page = await store.listUsers({ limit: 500, afterId: page[page.length - 1].id })
  }
  const sessions = await Promise.all(accounts.map(account => store.listLiveSessions(account.id, now)))
  const tokens = await Promise.all(accounts.map(account => store.findRefreshToken(hashToken(account.refreshToken))))
  return JSON.stringify([users, sessions, tokens, await store.listSigningKeys()])
}

function base64url (value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

/**
 * Keeps two logged-in accounts (the caller and another user) alive across cases:
 * a case may log out, rotate or change them, and the next case should still
 * carry valid tokens where it asks for them.
 */
function accounts (server: FastifyInstance, variant: Variant) {
  const { store } = server

  async function logIn (email: string): Promise<Account | undefined> {
    const response = await server.inject({ method: 'POST', url: '/auth/login', payload: { email, password: PASSWORD } })
    if (response.statusCode !== 200) return undefined
    const refreshToken = variant === 'header' ? response.json().refreshToken : cookieValue(response, 'refreshToken')
    return { id: response.json().user.id, accessToken: response.json().accessToken, refreshToken }
  }

  async function fresh (): Promise<Account> {
    const body = newUserBody(variant, { password: PASSWORD })
    const registered = await server.inject({ method: 'POST', url: '/auth/register', payload: body })
    if (registered.statusCode !== 201) throw new Error(`register failed: ${registered.body}`)
    return await logIn(body.email) as Account
  }

  async function alive (account: Account): Promise<boolean> {
    const token = await store.findRefreshToken(hashToken(account.refreshToken))
    if (token === undefined || token.rotatedAt !== null || token.revokedAt !== null || token.expiresAt <= new Date()) return false
    try {
      await server.accessTokens.verify(account.accessToken)
      return true
    } catch {
      return false
    }
  }

  async function revive (account: Account): Promise<Account> {
    if (await alive(account)) return account
    const user = await store.findUserById(account.id)
    return (user === undefined ? undefined : await logIn(user.email)) ?? await fresh()
  }

  return { fresh, revive }
}

function resolveToken (kind: TokenKind, own: Account, other: Account): string {
  if (typeof kind === 'object') return kind.literal
  const [header, payload, signature] = own.accessToken.split('.')
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
  switch (kind) {
    case 'ownAccess': return own.accessToken
    case 'ownRefresh': return own.refreshToken
    case 'otherAccess': return other.accessToken
    case 'otherRefresh': return other.refreshToken
    case 'refreshAsAccess': return own.refreshToken
    case 'accessAsRefresh': return own.accessToken
    case 'tamperedAccess': return `${header}.${base64url({ ...claims, sub: String(other.id) })}.${signature}`
    case 'algNone': return `${base64url({ alg: 'none', typ: 'JWT' })}.${payload}.`
    case 'hs256': {
      const unsigned = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${payload}`
      return `${unsigned}.${createHmac('sha256', 'guessed secret').update(unsigned).digest('base64url')}`
    }
    case 'junkHeaderJwt': return `${base64url({ alg: { __proto__: 'EdDSA' }, kid: [1], crit: ['x'] })}.${payload}.${signature}`
  }
}

function resolveHeader (value: HeaderValue, own: Account, other: Account): string {
  if (typeof value === 'string') return value
  if ('cookies' in value) return [...value.cookies.map(([name, kind]) => `${name}=${resolveToken(kind, own, other)}`), value.junk].join('; ')
  return `${value.before}${resolveToken(value.token, own, other)}${value.after}`
}

function resolveRequest (variant: Variant, request: FuzzRequest, own: Account, other: Account) {
  let index = 0
  const url = request.path.replace(/:[A-Za-z]+/g, () => {
    const value = request.params[index++]
    return value === '$own' ? String(own.id) : value === '$other' ? String(other.id) : value
  }) + request.query
  const headers: Record<string, string> = {}
  // A body is sent as JSON unless a generated content-type says otherwise.
  if (request.payload !== undefined) headers['content-type'] = 'application/json'
  const holder = request.credentials === 'own' ? own : request.credentials === 'other' ? other : undefined
  if (holder !== undefined && variant === 'header') {
    headers.authorization = `Bearer ${holder.accessToken}`
    headers['x-refresh-token'] = `Bearer ${holder.refreshToken}`
  }
  if (holder !== undefined && variant === 'cookie') headers.cookie = `accessToken=${holder.accessToken}; refreshToken=${holder.refreshToken}`
  for (const [name, value] of request.headers) headers[name] = resolveHeader(value, own, other)
  return { method: request.method as HTTPMethods, url, headers, payload: request.payload }
}

/** The contract's error shape, and nothing of ours leaking into it. */
/**
 * The OAuth / OpenID provider's protocol endpoints (/oauth/*, its discovery) answer as RFC 6749 says, for the
 * apps' libraries: `{ error, error_description }` in JSON, or, at the endpoints a browser opens (authorize,
 * device, logout), an error page. Their unknown paths, and the sign-in page's own JSON steps, use the contract's shape.
 */
function oauthErrorProblem (response: LightMyRequestResponse): string | undefined {
  if (/^text\/html/.test(String(response.headers['content-type']))) return undefined
  let body: Record<string, unknown>
  try {
    body = response.json()
  } catch {
    return 'body is not JSON'
  }
  if ('code' in body) return errorShapeProblem(response)
  if (typeof body.error !== 'string' || !/^[a-z_]+$/.test(body.error)) return `OAuth error ${String(body.error)}`
  if (Object.keys(body).some(key => !['error', 'error_description', 'iss', 'state', 'scope'].includes(key))) return 'fields beyond an OAuth error\'s'
  if (typeof body.error_description === 'string' && /at .*\.(ts|js):\d+|node_modules/.test(body.error_description)) return 'error_description leaks internals'
  return undefined
}

/** The answer's `code` (or an OAuth answer's `error`, or "html" for a page) for the outcome counts. */
function answerCode (response: LightMyRequestResponse): string {
  try {
    const body = response.json()
    return String(body.code ?? body.error)
  } catch {
    return 'html'
  }
}

/**
 * Whether the route that answers `url` is the provider's protocol (its error shape is RFC 6749's). Read from the path as
 * the service sees it: inject resolves dot segments as a URL does (light-my-request's parseURL, whose steps these are),
 * so `/oauth/interaction/../consent` is `/oauth/consent`.
 */
function isOAuthProtocol (url: string): boolean {
  const base = 'http://localhost'
  const path = new URL(url.startsWith('//') ? `${base}${url}` : url, base).pathname
  return (path.startsWith('/oauth/') && !path.startsWith('/oauth/interaction/')) || path.startsWith('/.well-known/openid-configuration')
}

function errorShapeProblem (response: LightMyRequestResponse): string | undefined {
  if (!/^application\/json/.test(String(response.headers['content-type']))) return `content-type ${response.headers['content-type']}`
  let body: Record<string, unknown>
  try {
    body = response.json()
  } catch {
    return 'body is not JSON'
  }
  if (JSON.stringify(Object.keys(body).sort()) !== '["code","error","message","statusCode"]') return 'fields are not statusCode, code, error, message'
  if (body.statusCode !== response.statusCode) return 'statusCode differs from the status'
  if (body.error !== STATUS_CODES[response.statusCode]) return 'error is not the status text'
  if (typeof body.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(body.code) || /^(FST|FAST|ERR)_/.test(body.code)) return `code ${String(body.code)}`
  if (typeof body.message !== 'string' || /SQLITE|at .*\.(ts|js):\d+|node_modules/.test(body.message)) return 'message leaks internals'
  return undefined
}

/** A key that every object now inherits, if a request managed to add one to Object.prototype or Array.prototype. */
function pollutedPrototype (): string | undefined {
  const inherited = [...Object.keys(Object.prototype), ...Object.keys(Array.prototype)]
  return inherited.length > 0 ? inherited.join(', ') : undefined
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: hostile requests to every route`, async (t) => {
    const databaseUrl = await testDatabaseUrl(t, { persistent: true })
    const { server, routes } = await buildCollectingRoutes(t, variant, databaseUrl)
    const declared = new Set(routes.map(route => `${route.method} ${route.url}`))
    for (const expected of EXPECTED_ROUTES[variant]) t.ok(declared.has(expected), `the app declares ${expected}`)

    // The RS256 key of ID tokens is made at its first need (once per store, like the provider's cookie key):
    // made here, before the fuzzing, the first OAuth request among the refused ones does not count as a change.
    await server.inject({ method: 'GET', url: '/.well-known/jwks.json' })

    const keeper = accounts(server, variant)
    let own = await keeper.fresh()
    let other = await keeper.fresh()

    const property = fc.asyncProperty(fc.oneof(...routes.map(requestTo), strayRequest), async (request) => {
      casesRun += 1
      own = await keeper.revive(own)
      other = await keeper.revive(other)
      const now = new Date()
      const before = await storeSnapshot(server.store, [own, other], now)
      const sent = resolveRequest(variant, request, own, other)
      const response = await server.inject(sent)
      const outcome = `${response.statusCode} ${response.statusCode >= 400 && sent.method !== 'HEAD' ? answerCode(response) : ''}`.trim()
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
      const where = `${sent.method} ${sent.url} answered ${response.statusCode} ${response.body.slice(0, 300)}`
      if (response.statusCode >= 500) throw new Error(`5xx: ${where}`)
      if (response.statusCode >= 400) {
        const problem = sent.method === 'HEAD' ? undefined : isOAuthProtocol(sent.url) ? oauthErrorProblem(response) : errorShapeProblem(response)
        if (problem !== undefined) throw new Error(`error shape: ${problem}: ${where}`)
        if (await storeSnapshot(server.store, [own, other], now) !== before) throw new Error(`a refused request changed the store: ${where}`)
      }
      const polluted = pollutedPrototype()
      if (polluted !== undefined) throw new Error(`prototype polluted with ${polluted}: ${where}`)
    })
    const runs = RUNS_PER_ROUTE * (routes.length + 1)
    await fc.assert(property, { numRuns: runs, seed: SEED })
    t.pass(`${runs} generated requests over ${routes.length} routes and stray paths`)

    // Still healthy: the health check answers and a whole session works.
    const health = await server.inject({ method: 'GET', url: '/health' })
    t.equal(health.statusCode, 200)
    const account = await keeper.fresh()
    const read = await server.inject({
      method: 'GET',
      url: `/users/${account.id}`,
      ...(variant === 'header' ? { headers: { authorization: `Bearer ${account.accessToken}` } } : { cookies: { accessToken: account.accessToken } })
    })
    t.equal(read.statusCode, 200, 'a fresh user reads itself after the fuzzing')
    if (!onPostgres) {
      const connection = new Database(databaseUrl, { readonly: true })
      t.equal(connection.pragma('integrity_check', { simple: true }), 'ok')
      connection.close()
    }
  })
}

t.teardown(() => {
  const answers = [...outcomes].sort((a, b) => b[1] - a[1]).map(([outcome, count]) => `${outcome}: ${count}`).join(', ')
  console.log(`# fuzz cases run: ${casesRun} (FUZZ_RUNS=${RUNS_PER_ROUTE} per route); answers: ${answers}`)
})

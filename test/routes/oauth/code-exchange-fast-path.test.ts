import type { LightMyRequestResponse } from 'fastify'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { addResourceServer } from '../../../core/oauth/resource-servers.js'
import { build } from '../../fixtures/build.js'
import { testDatabaseUrl } from '../../fixtures/database.js'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, basicAuthorization, CookieJar, countingForwards, providerService, REDIRECT_URI, relyingParty, stableHeaders, type CountedInstance } from '../../fixtures/oauth.js'

// The token endpoint's authorization_code grant in its common case is the service's (core/oauth/authorization-code-grant.ts),
// not oidc-provider's. Two instances over one store and one issuer: one with the fast path, one with
// OAUTH_TOKEN_FAST_PATH=false, where oidc-provider answers. Two codes of one sign-in, one exchanged at each, get the same
// answer and the same tokens; a request the fast path does not serve reaches oidc-provider before anything is spent.
// Runs on both backends.

const API = 'https://api.example.com/orders'

/** Claims that differ from one token to the next. */
const VOLATILE_CLAIMS = ['jti', 'iat', 'exp', 'status'] as const

interface App { clientId: string, clientSecret?: string }

async function instances (t: Test) {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const served = await providerService(t, { env: { DATABASE_URL: databaseUrl } })
  const fast = countingForwards(served.server)
  const provider = countingForwards(await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, PUBLIC_URL: served.baseUrl, COOKIE_SECURE: 'false', OAUTH_TOKEN_FAST_PATH: 'false' } }))
  await addResourceServer(fast.server.store, { uri: API, scopes: ['orders:read', 'orders:write'] }, new Date())
  const person = await registerUser(fast.server, 'header')
  const jar = new CookieJar()
  /** A fresh code of `app` for the person (signed in once in the jar), with the PKCE verifier that goes with it. */
  async function codeOf (app: App, scope = 'openid email profile', extra: Record<string, string> = {}, pkce = true) {
    // A nonce where an ID token is asked for; offline_access only with prompt=consent (OpenID Connect Core §11).
    const asked = scope.split(' ')
    const request = await authorizationRequest(await relyingParty(served.baseUrl, app), scope, {
      ...(asked.includes('openid') ? { nonce: 'n-0S6_WzA2Mj' } : {}),
      ...(asked.includes('offline_access') ? { prompt: 'consent' } : {}),
      ...extra
    })
    const url = pkce ? request.url : withoutPkce(request.url)
    const callback = await authorizeInBrowser(served.baseUrl, jar, url, { person })
    const code = callback.searchParams.get('code')
    if (code === null) throw new Error(`no code: ${callback.href}`)
    return { code, verifier: request.verifier }
  }
  return { fast, provider, codeOf, person, baseUrl: served.baseUrl }
}

function withoutPkce (url: URL): URL {
  const bare = new URL(url)
  bare.searchParams.delete('code_challenge')
  bare.searchParams.delete('code_challenge_method')
  return bare
}

/** The exchange of `code` by `app`: HTTP Basic for a confidential app (or its secret in the form), client_id alone for a public one. */
function exchangeOf (app: App, code: { code: string, verifier?: string }, { post = false, extra = {} }: { post?: boolean, extra?: Record<string, string> } = {}) {
  const form = new URLSearchParams({ grant_type: 'authorization_code', code: code.code, redirect_uri: REDIRECT_URI, ...(code.verifier === undefined ? {} : { code_verifier: code.verifier }), ...extra })
  const headers: Record<string, string> = {}
  if (app.clientSecret === undefined || post) {
    form.set('client_id', app.clientId)
    if (app.clientSecret !== undefined) form.set('client_secret', app.clientSecret)
  } else {
    headers.authorization = basicAuthorization(app.clientId, app.clientSecret)
  }
  return { form: form.toString(), headers }
}

async function post (instance: CountedInstance, { form, headers = {} }: { form: string, headers?: Record<string, string> }): Promise<LightMyRequestResponse> {
  return await instance.server.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: form })
}

/** A JWT's header and claims, without what differs from one token to the next (the status entry's index: only its list). */
function comparable (jwt: string | undefined) {
  if (jwt === undefined) return undefined
  const claims: Record<string, unknown> = { ...decodeJwt(jwt) }
  const status = claims.status as { status_list?: { uri: string } } | undefined
  const lifetime = Number(claims.exp) - Number(claims.iat)
  for (const name of VOLATILE_CLAIMS) Reflect.deleteProperty(claims, name)
  return { header: decodeProtectedHeader(jwt), claims, lifetime, statusList: status?.status_list?.uri }
}

/** One code exchanged at each instance: the same status, headers, members and tokens; the fast one did not forward it. */
async function sameAnswer (t: Test, fast: CountedInstance, provider: CountedInstance, requests: [ReturnType<typeof exchangeOf>, ReturnType<typeof exchangeOf>]) {
  const before = fast.forwarded()
  const ours = await post(fast, requests[0])
  const theirs = await post(provider, requests[1])
  t.equal(fast.forwarded(), before, 'the fast path answered')
  t.equal(ours.statusCode, 200, ours.body)
  t.equal(theirs.statusCode, 200, theirs.body)
  t.same(stableHeaders(ours), stableHeaders(theirs), 'the same headers (Cache-Control: no-store, CORS, the security headers)')
  const [mine, provided] = [ours.json(), theirs.json()]
  t.same(Object.keys(mine), Object.keys(provided), 'the same members, in the same order')
  t.same({ ...mine, access_token: 0, id_token: 0, refresh_token: 0 }, { ...provided, access_token: 0, id_token: 0, refresh_token: 0 }, 'expires_in, token_type and scope the same')
  t.same(comparable(mine.access_token), comparable(provided.access_token), 'the same access token header and claims (aud, scope, sub, client_id, grant_id, status list)')
  t.same(comparable(mine.id_token), comparable(provided.id_token), 'the same ID token header (alg, kid) and claims (nonce, sid, auth_time, the scopes\' claims)')
  t.equal(typeof mine.refresh_token, typeof provided.refresh_token, 'a refresh token from both or neither')
  return { mine, provided }
}

t.test('a code exchange gets from the fast path the answer and the tokens oidc-provider gives', async (t) => {
  const { fast, provider, codeOf } = await instances(t)
  const confidential = await addClient(fast.server, { trusted: true, grants: ['authorization_code', 'refresh_token'] })
  const spa = await addClient(fast.server, { public: true, trusted: true, grants: ['authorization_code', 'refresh_token'] })
  const optional = await addClient(fast.server, { trusted: true, pkce: 'optional' })
  const cases: Array<[string, () => Promise<[ReturnType<typeof exchangeOf>, ReturnType<typeof exchangeOf>]>]> = [
    ['HTTP Basic, PKCE, an RS256 ID token (the default)', async () => [exchangeOf(confidential, await codeOf(confidential)), exchangeOf(confidential, await codeOf(confidential))]],
    ['client_secret_post', async () => [exchangeOf(confidential, await codeOf(confidential), { post: true }), exchangeOf(confidential, await codeOf(confidential), { post: true })]],
    ['a public client (PKCE, no secret)', async () => [exchangeOf(spa, await codeOf(spa)), exchangeOf(spa, await codeOf(spa))]],
    ['offline_access: a refresh token', async () => [exchangeOf(confidential, await codeOf(confidential, 'openid offline_access email')), exchangeOf(confidential, await codeOf(confidential, 'openid offline_access email'))]],
    ['a registered API (RFC 8707): its audience and scopes', async () => {
      const scope = 'openid orders:read'
      return [exchangeOf(confidential, await codeOf(confidential, scope, { resource: API })), exchangeOf(confidential, await codeOf(confidential, scope, { resource: API }))]
    }],
    ['no openid: no ID token', async () => [exchangeOf(confidential, await codeOf(confidential, 'email')), exchangeOf(confidential, await codeOf(confidential, 'email'))]],
    ['a confidential client registered with --pkce optional, without PKCE', async () => {
      const [ours, theirs] = [await codeOf(optional, 'openid', {}, false), await codeOf(optional, 'openid', {}, false)]
      return [exchangeOf(optional, { code: ours.code }), exchangeOf(optional, { code: theirs.code })]
    }]
  ]
  for (const [name, requests] of cases) {
    await t.test(name, async (t) => { await sameAnswer(t, fast, provider, await requests()) })
  }
})

t.test('the fast path\'s tokens work as oidc-provider\'s: userinfo, refresh, introspection; a code spent there is spent everywhere', async (t) => {
  const { fast, provider, codeOf } = await instances(t)
  const app = await addClient(fast.server, { trusted: true, grants: ['authorization_code', 'refresh_token'] })
  const auth = { authorization: basicAuthorization(app.clientId, String(app.clientSecret)), 'content-type': 'application/x-www-form-urlencoded' }
  const code = await codeOf(app, 'openid offline_access email')
  const ours = await post(fast, exchangeOf(app, code))
  t.equal(ours.statusCode, 200)
  const { access_token: accessToken, refresh_token: refreshToken } = ours.json()

  const userinfo = await fast.server.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${String(accessToken)}` } })
  t.equal(userinfo.statusCode, 200)
  t.ok(userinfo.json().email, 'userinfo answers with the scope\'s claims')
  const introspected = await provider.server.inject({ method: 'POST', url: '/oauth/introspect', headers: auth, payload: `token=${String(accessToken)}` })
  t.match(introspected.json(), { active: true, client_id: app.clientId })
  const refreshed = await provider.server.inject({ method: 'POST', url: '/oauth/token', headers: auth, payload: `grant_type=refresh_token&refresh_token=${String(refreshToken)}` })
  t.equal(refreshed.statusCode, 200, `the refresh token is one oidc-provider takes: ${refreshed.body}`)

  // The same code again, at either instance: invalid_grant, and the grant made from it ends (RFC 6749 §4.1.2).
  for (const instance of [fast, provider]) {
    const again = await post(instance, exchangeOf(app, code))
    t.equal(again.statusCode, 400)
    t.equal(again.json().error, 'invalid_grant')
  }
  const afterReplay = await fast.server.inject({ method: 'POST', url: '/oauth/introspect', headers: auth, payload: `token=${String(accessToken)}` })
  t.same(afterReplay.json(), { active: false }, 'the replay ended the grant: its access token is revoked')
})

t.test('a request the fast path does not serve goes to oidc-provider, which answers it as before and spends nothing first', async (t) => {
  const { fast, provider, codeOf } = await instances(t)
  const app = await addClient(fast.server, { trusted: true, grants: ['authorization_code', 'refresh_token'] })
  const other = await addClient(fast.server, { trusted: true })
  const cases: Array<[string, (code: { code: string, verifier: string }) => ReturnType<typeof exchangeOf>]> = [
    ['a wrong PKCE verifier', (code) => exchangeOf(app, { code: code.code, verifier: `${code.verifier.slice(0, -1)}x` })],
    ['no PKCE verifier', (code) => exchangeOf(app, { code: code.code })],
    ['a malformed PKCE verifier', (code) => exchangeOf(app, { code: code.code, verifier: 'short' })],
    ['another redirect_uri', (code) => exchangeOf(app, code, { extra: { redirect_uri: 'http://127.0.0.1:4999/other' } })],
    ['another client\'s code', (code) => exchangeOf(other, code)],
    ['a wrong secret', (code) => exchangeOf({ clientId: app.clientId, clientSecret: 'wrong' }, code)],
    ['an unknown code', (code) => exchangeOf(app, { code: `${code.code}x`, verifier: code.verifier })],
    ['a parameter the fast path does not take (resource)', (code) => exchangeOf(app, code, { extra: { resource: API } })],
    ['a DPoP proof', (code) => ({ ...exchangeOf(app, code), headers: { ...exchangeOf(app, code).headers, dpop: 'not-a-proof' } })],
    ['a browser\'s request (CORS)', (code) => ({ ...exchangeOf(app, code), headers: { ...exchangeOf(app, code).headers, origin: 'https://app.example.com' } })]
  ]
  for (const [name, requestOf] of cases) {
    await t.test(name, async (t) => {
      const [ours, theirs] = [await codeOf(app), await codeOf(app)]
      const before = fast.forwarded()
      const [mine, provided] = [await post(fast, requestOf(ours)), await post(provider, requestOf(theirs))]
      t.equal(fast.forwarded(), before + 1, 'handed to oidc-provider')
      t.equal(mine.statusCode, provided.statusCode)
      t.same(stableHeaders(mine), stableHeaders(provided))
      if (mine.statusCode === 200) t.same(comparable(mine.json().access_token), comparable(provided.json().access_token))
      else t.same(mine.json(), provided.json())
      // The fast path spent nothing before handing the request over: the code is as spent (or not) as oidc-provider left its own.
      const [mineAfter, providedAfter] = [await post(fast, exchangeOf(app, ours)), await post(provider, exchangeOf(app, theirs))]
      t.equal(mineAfter.statusCode, providedAfter.statusCode, `the code exchanges afterwards as oidc-provider's does (${providedAfter.statusCode})`)
    })
  }
})

t.test('a disabled user\'s code is refused by oidc-provider (invalid_grant), not served', async (t) => {
  const { fast, codeOf, person } = await instances(t)
  const app = await addClient(fast.server, { trusted: true })
  const code = await codeOf(app)
  t.ok(await fast.server.store.disableUser(Number(person.id), new Date()), 'disabled')
  const before = fast.forwarded()
  const answer = await post(fast, exchangeOf(app, code))
  t.equal(fast.forwarded(), before + 1, 'handed to oidc-provider')
  t.equal(answer.statusCode, 400)
  t.equal(answer.json().error, 'invalid_grant')
})

t.test('openid-client exchanges a code on the fast path and verifies the ID token', async (t) => {
  const { fast, baseUrl } = await instances(t)
  const app = await addClient(fast.server, { trusted: true })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config)
  const person = await registerUser(fast.server, 'header', { email: 'rp@example.com' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person })
  const before = fast.forwarded()
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(fast.forwarded(), before, 'the fast path answered')
  t.equal(tokens.claims()?.email, 'rp@example.com')
})

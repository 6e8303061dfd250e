import type { LightMyRequestResponse } from 'fastify'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import t, { type Test } from 'tap'
import { addResourceServer } from '../../../core/oauth/resource-servers.js'
import { build } from '../../fixtures/build.js'
import { testDatabaseUrl } from '../../fixtures/database.js'
import { addClient, basicAuthorization, countingForwards, stableHeaders, type CountedInstance } from '../../fixtures/oauth.js'

// The token endpoint's client-credentials grant in its common case is the service's (core/oauth/client-credentials-grant.ts),
// not oidc-provider's. Two instances over one store (one key ring, one client list): one with the fast path, one with
// OAUTH_TOKEN_FAST_PATH=false, where oidc-provider answers. The same request gets the same answer from both, and a token
// of the fast path is revoked and introspected as one of the provider's. Runs on both backends.

const API = 'https://api.example.com/orders'

async function instances (t: Test) {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const fast = countingForwards(await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl } }))
  const provider = countingForwards(await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, OAUTH_TOKEN_FAST_PATH: 'false' } }))
  await addResourceServer(fast.server.store, { uri: API, scopes: ['orders:read', 'orders:write'] }, new Date())
  const machine = await addClient(fast.server, { grants: ['client_credentials'], redirectUris: [] })
  return { fast, provider, machine: { clientId: machine.clientId, clientSecret: String(machine.clientSecret) } }
}

interface TokenRequest {
  form: string
  headers?: Record<string, string>
}

async function post (instance: CountedInstance, { form, headers = {} }: TokenRequest): Promise<LightMyRequestResponse> {
  return await instance.server.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: form
  })
}

/** An access token's header and claims, without what differs from one token to the next (jti, iat, exp, the status index). */
function comparable (accessToken: string) {
  const { jti, iat, exp, status, ...claims } = decodeJwt(accessToken)
  const { status_list: { idx, uri } } = status as { status_list: { idx: number, uri: string } }
  return { header: decodeProtectedHeader(accessToken), claims, statusList: uri, lifetime: Number(exp) - Number(iat), jti: typeof jti, idx: Number.isInteger(idx) }
}

/** Both instances' answers to the request; the fast one must not have forwarded it. */
async function servedByBoth (t: Test, fast: CountedInstance, provider: CountedInstance, request: TokenRequest) {
  const before = fast.forwarded()
  const ours = await post(fast, request)
  const theirs = await post(provider, request)
  t.equal(fast.forwarded(), before, 'the fast path answered')
  t.equal(provider.forwarded() > 0, true, 'oidc-provider answered the other')
  return { ours, theirs }
}

t.test('a client-credentials grant gets from the fast path the answer and the token oidc-provider gives', async (t) => {
  const { fast, provider, machine } = await instances(t)
  const cases: Array<[string, TokenRequest]> = [
    ['HTTP Basic', { form: 'grant_type=client_credentials', headers: { authorization: basicAuthorization(machine.clientId, machine.clientSecret) } }],
    ['HTTP Basic, client_id in the form too', { form: `grant_type=client_credentials&client_id=${machine.clientId}`, headers: { authorization: basicAuthorization(machine.clientId, machine.clientSecret) } }],
    ['client_secret_post', { form: `grant_type=client_credentials&client_id=${machine.clientId}&client_secret=${machine.clientSecret}` }],
    ['a registered API', { form: `grant_type=client_credentials&resource=${encodeURIComponent(API)}`, headers: { authorization: basicAuthorization(machine.clientId, machine.clientSecret) } }],
    ['a registered API and some of its scopes', {
      form: `grant_type=client_credentials&resource=${encodeURIComponent(API)}&scope=orders%3Awrite+unknown+orders%3Aread`,
      headers: { authorization: basicAuthorization(machine.clientId, machine.clientSecret) }
    }],
    ['the service itself named', { form: `grant_type=client_credentials&resource=${encodeURIComponent('http://localhost:3000')}`, headers: { authorization: basicAuthorization(machine.clientId, machine.clientSecret) } }],
    ['an empty scope', { form: 'grant_type=client_credentials&scope=', headers: { authorization: basicAuthorization(machine.clientId, machine.clientSecret) } }]
  ]
  for (const [name, request] of cases) {
    await t.test(name, async (t) => {
      const { ours, theirs } = await servedByBoth(t, fast, provider, request)
      t.equal(ours.statusCode, 200)
      t.equal(theirs.statusCode, 200)
      t.same(stableHeaders(ours), stableHeaders(theirs), 'the same headers (Cache-Control: no-store, the type, the security headers)')
      t.match(ours.headers, { 'cache-control': 'no-store' })
      const [mine, provided] = [ours.json(), theirs.json()]
      t.same(Object.keys(mine), Object.keys(provided), 'the same members, in the same order')
      t.same({ ...mine, access_token: undefined }, { ...provided, access_token: undefined }, 'expires_in, token_type and scope the same')
      t.same(comparable(mine.access_token), comparable(provided.access_token), 'the same JWT header (alg, kid, typ) and claims, in the same status list')
    })
  }
})

t.test('a wrong or missing secret is answered by oidc-provider: 401 invalid_client with its WWW-Authenticate', async (t) => {
  const { fast, provider, machine } = await instances(t)
  for (const request of [
    { form: 'grant_type=client_credentials', headers: { authorization: basicAuthorization(machine.clientId, `${machine.clientSecret}x`) } },
    { form: `grant_type=client_credentials&client_id=${machine.clientId}&client_secret=wrong` },
    { form: 'grant_type=client_credentials', headers: { authorization: basicAuthorization(machine.clientId, `sha256:${machine.clientSecret}`) } },
    { form: `grant_type=client_credentials&client_id=${machine.clientId}` }
  ]) {
    const before = fast.forwarded()
    const [ours, theirs] = [await post(fast, request), await post(provider, request)]
    t.equal(fast.forwarded(), before + 1, 'handed to oidc-provider')
    t.equal(ours.statusCode, 401)
    t.equal(ours.json().error, 'invalid_client')
    t.same([ours.statusCode, ours.json(), ours.headers['www-authenticate']], [theirs.statusCode, theirs.json(), theirs.headers['www-authenticate']])
  }
})

t.test('a request the fast path does not serve goes to oidc-provider unchanged', async (t) => {
  const { fast, provider, machine } = await instances(t)
  const auth = { authorization: basicAuthorization(machine.clientId, machine.clientSecret) }
  const app = await addClient(fast.server, { grants: ['authorization_code', 'refresh_token'] })
  const spa = await addClient(fast.server, { public: true, grants: ['authorization_code'] })
  const cases: Array<[string, TokenRequest]> = [
    ['another grant', { form: 'grant_type=authorization_code&code=abc&redirect_uri=http%3A%2F%2F127.0.0.1%3A4999%2Fcallback', headers: auth }],
    ['a client not allowed the grant', { form: 'grant_type=client_credentials', headers: { authorization: basicAuthorization(app.clientId, String(app.clientSecret)) } }],
    ['an unknown client', { form: 'grant_type=client_credentials', headers: { authorization: basicAuthorization('nobody', 'secret') } }],
    ['a public client', { form: `grant_type=client_credentials&client_id=${spa.clientId}` }],
    ['a DPoP proof', { form: 'grant_type=client_credentials', headers: { ...auth, dpop: 'not-a-proof' } }],
    ['openid in the scope', { form: 'grant_type=client_credentials&scope=openid', headers: auth }],
    ['a user scope with an API', { form: `grant_type=client_credentials&resource=${encodeURIComponent(API)}&scope=email`, headers: auth }],
    ['a scope with no resource', { form: 'grant_type=client_credentials&scope=orders%3Aread', headers: auth }],
    ['none of the API\'s scopes', { form: `grant_type=client_credentials&resource=${encodeURIComponent(API)}&scope=admin`, headers: auth }],
    ['a scope of bad syntax', { form: `grant_type=client_credentials&resource=${encodeURIComponent(API)}&scope=orders%3Aread++orders%3Awrite`, headers: auth }],
    ['an unknown resource', { form: 'grant_type=client_credentials&resource=https%3A%2F%2Funknown.example.com%2F', headers: auth }],
    ['two resources', { form: `grant_type=client_credentials&resource=${encodeURIComponent(API)}&resource=${encodeURIComponent(API)}`, headers: auth }],
    ['a parameter named twice', { form: 'grant_type=client_credentials&grant_type=client_credentials', headers: auth }],
    ['a parameter the fast path does not know', { form: 'grant_type=client_credentials&audience=x', headers: auth }],
    ['two ways of authentication', { form: `grant_type=client_credentials&client_secret=${machine.clientSecret}`, headers: auth }],
    ['client ids that differ', { form: 'grant_type=client_credentials&client_id=other', headers: auth }],
    ['a browser\'s request (CORS)', { form: 'grant_type=client_credentials', headers: { ...auth, origin: 'https://app.example.com' } }],
    ['another charset', { form: 'grant_type=client_credentials', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded; charset=iso-8859-1' } }],
    ['a malformed Basic header', { form: 'grant_type=client_credentials', headers: { authorization: 'Basic !!!' } }]
  ]
  for (const [name, request] of cases) {
    await t.test(name, async (t) => {
      const before = fast.forwarded()
      const [ours, theirs] = [await post(fast, request), await post(provider, request)]
      t.equal(fast.forwarded(), before + 1, 'handed to oidc-provider')
      t.equal(ours.statusCode, theirs.statusCode)
      t.same(stableHeaders(ours), stableHeaders(theirs))
      if (ours.statusCode === 200) t.same(comparable(ours.json().access_token), comparable(theirs.json().access_token))
      else t.same(ours.json(), theirs.json())
    })
  }
})

t.test('a token of the fast path is introspected and revoked (RFC 7662, 7009) as one of oidc-provider\'s', async (t) => {
  const { fast, provider, machine } = await instances(t)
  const auth = { authorization: basicAuthorization(machine.clientId, machine.clientSecret) }
  const ours = (await servedByBoth(t, fast, provider, { form: 'grant_type=client_credentials', headers: auth })).ours.json().access_token
  for (const at of [fast, provider]) {
    const introspected = await at.server.inject({ method: 'POST', url: '/oauth/introspect', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${ours}` })
    t.match(introspected.json(), { active: true, client_id: machine.clientId, sub: machine.clientId, aud: 'http://localhost:3000' })
  }
  const revoked = await provider.server.inject({ method: 'POST', url: '/oauth/revoke', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${ours}` })
  t.equal(revoked.statusCode, 200)
  for (const at of [fast, provider]) {
    const introspected = await at.server.inject({ method: 'POST', url: '/oauth/introspect', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${ours}` })
    t.same(introspected.json(), { active: false }, 'revoked, on both instances')
  }
})

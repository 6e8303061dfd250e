import { decodeJwt } from 'jose'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, oauthErrorOf, providerService, REDIRECT_URI, relyingParty } from '../../fixtures/oauth.js'

// Issue 34, items 8, 9 and 11: where the provider's answers differed from what the RFCs tell a relying party.

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
const form = (fields: Record<string, string>) => new URLSearchParams(fields)
const basic = (app: { clientId: string, clientSecret?: string }) => `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret ?? ''}`).toString('base64')}`

async function post (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: form(fields) })
}

/** Moves the time every part of the service reads (oidc-provider reads Date.now itself) forward by `milliseconds`. */
function moveTimeForward (t: Test, milliseconds: number): void {
  const realNow = Date.now
  Date.now = () => realNow() + milliseconds
  t.teardown(() => { Date.now = realNow })
}

t.test('RFC 7592: reading a registration back gives no client_secret (the stored hash is no secret to hand out)', async (t) => {
  const token = 'registration-token-0123456789'
  const { baseUrl } = await providerService(t, { env: { OAUTH_REGISTRATION_TOKEN: token } })
  const answer = await fetch(`${baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ client_name: 'Registered', redirect_uris: [REDIRECT_URI] })
  })
  t.equal(answer.status, 201)
  const created = await answer.json() as { client_secret: string, registration_client_uri: string, registration_access_token: string }
  t.ok(created.client_secret, 'the secret is shown once, at registration')

  const read = await fetch(created.registration_client_uri, { headers: { authorization: `Bearer ${created.registration_access_token}` } })
  t.equal(read.status, 200)
  const body = await read.json() as Record<string, unknown>
  t.equal(body.client_secret, undefined, 'no client_secret in the read')
  t.equal(body.client_secret_expires_at, undefined)
  t.notOk(JSON.stringify(body).includes('sha256:'), 'no hash of it either')
  t.equal(body.client_name, 'Registered')
})

t.test('RFC 8628: the device answer names an interval; a device polling after its code expired hears expired_token', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { name: 'TV App', public: true, redirectUris: [], grants: [DEVICE_GRANT] })
  const started = await post(`${baseUrl}/oauth/device/auth`, { client_id: app.clientId, scope: 'openid' })
  t.equal(started.status, 200)
  const device = await started.json() as { device_code: string, interval?: number, expires_in: number }
  t.equal(device.interval, 5, 'interval (RFC 8628 §3.2)')

  const pending = await (await post(`${baseUrl}/oauth/token`, { client_id: app.clientId, grant_type: DEVICE_GRANT, device_code: device.device_code })).json()
  t.equal(pending.error, 'authorization_pending')

  moveTimeForward(t, (device.expires_in + 5) * 1000)
  const expired = await post(`${baseUrl}/oauth/token`, { client_id: app.clientId, grant_type: DEVICE_GRANT, device_code: device.device_code })
  t.equal(expired.status, 400)
  t.equal((await expired.json()).error, 'expired_token', 'RFC 8628 §3.5')
})

t.test('RFC 7009: every revocation answer is 200, empty, of one content type; another client\'s token is refused to a confidential client', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { grants: ['authorization_code', 'refresh_token', 'client_credentials'] })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid offline_access', { prompt: 'consent' })
  const tokens = await client.authorizationCodeGrant(config, await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user }), { pkceCodeVerifier: request.verifier, expectedState: request.state })
  const machine = await client.clientCredentialsGrant(config)

  const other = await addClient(server, { name: 'Other', grants: ['client_credentials'], redirectUris: [] })
  for (const [name, token] of [['an access token (JWT)', tokens.access_token], ['a refresh token', tokens.refresh_token as string], ['a client-credentials token', machine.access_token]] as const) {
    const refused = await post(`${baseUrl}/oauth/revoke`, { token }, { authorization: basic(other) })
    t.equal(refused.status, 400, `${name} of another client: refused`)
    t.equal((await refused.json()).error, 'unauthorized_client')
  }
  t.match(await client.tokenIntrospection(config, tokens.refresh_token as string), { active: true }, 'and left alive')

  const publicApp = await addClient(server, { name: 'SPA', public: true })
  const quiet = await post(`${baseUrl}/oauth/revoke`, { token: tokens.refresh_token as string, client_id: publicApp.clientId })
  t.equal(quiet.status, 200, 'a public client, which anyone may name, learns nothing')
  t.match(await client.tokenIntrospection(config, tokens.refresh_token as string), { active: true })

  const answers = []
  for (const token of [machine.access_token, tokens.access_token, tokens.refresh_token as string, 'not-a-token']) {
    const revoked = await post(`${baseUrl}/oauth/revoke`, { token }, { authorization: basic(app) })
    answers.push({ status: revoked.status, type: revoked.headers.get('content-type'), body: await revoked.text() })
  }
  t.same(new Set(answers.map(answer => JSON.stringify(answer))).size, 1, `one answer: ${JSON.stringify(answers)}`)
  t.match(answers[0], { status: 200, type: /^application\/json/, body: '' })
})

t.test('RFC 6749 §5.2: introspection and revocation without client authentication are 401 invalid_client with WWW-Authenticate', async (t) => {
  const { baseUrl } = await providerService(t)
  for (const endpoint of ['introspect', 'revoke']) {
    const answer = await post(`${baseUrl}/oauth/${endpoint}`, { token: 'anything' })
    t.equal(answer.status, 401, endpoint)
    t.match(answer.headers.get('www-authenticate'), /^Basic realm=/)
    t.equal((await answer.json()).error, 'invalid_client')
  }
})

t.test('claims_supported lists sid, and ID tokens carry it', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const discovery = await (await fetch(`${baseUrl}/.well-known/openid-configuration`)).json() as { claims_supported: string[] }
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server))
  const request = await authorizationRequest(config, 'openid')
  const tokens = await client.authorizationCodeGrant(config, await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user }), { pkceCodeVerifier: request.verifier, expectedState: request.state })
  const idToken = decodeJwt(tokens.id_token as string)
  for (const claim of discovery.claims_supported.filter(claim => ['sub', 'sid', 'iss'].includes(claim))) {
    t.ok(idToken[claim], `${claim} is listed and issued`)
  }
  t.ok(discovery.claims_supported.includes('sid'))
})

t.test('client credentials: scope=openid is invalid_scope; a scope it cannot grant is invalid_scope, not a token without `scope`', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { name: 'Machine', grants: ['client_credentials'], redirectUris: [] })
  const config = await relyingParty(baseUrl, app)
  t.equal(await oauthErrorOf(client.clientCredentialsGrant(config, { scope: 'openid' })), 'invalid_scope')
  const unknown = await post(`${baseUrl}/oauth/token`, { grant_type: 'client_credentials', scope: 'no-such-scope' }, { authorization: basic(app) })
  t.equal(unknown.status, 400)
  t.match(await unknown.json(), { error: 'invalid_scope' })
  t.ok(await client.clientCredentialsGrant(config), 'without a scope, a token')
})

t.test('an authorization asking for an unknown scope: the token answer names the scope granted (RFC 6749 §5.1)', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server))
  const request = await authorizationRequest(config, 'openid email no-such-scope')
  const tokens = await client.authorizationCodeGrant(config, await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user }), { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.scope, 'openid email')
})

import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { eventually } from '../../fixtures/eventually.js'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, providerService, REDIRECT_URI, relyingParty } from '../../fixtures/oauth.js'
import { logOutInBrowser } from '../../fixtures/relying-parties.js'

// OpenID Connect Back-Channel Logout 1.0: an app registered with a backchannel_logout_uri hears, by a
// signed logout token POSTed to it, that the user signed out of it (RP-initiated logout), signed out
// everywhere, or was disabled by an operator.

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

/** The app's back-channel endpoint: keeps each logout_token it is POSTed, answers 200. */
async function logoutReceiver (t: Test): Promise<{ url: string, tokens: string[], contentTypes: string[] }> {
  const tokens: string[] = []
  const contentTypes: string[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => { body += chunk.toString() })
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']))
      const token = new URLSearchParams(body).get('logout_token')
      if (req.method === 'POST' && token !== null) tokens.push(token)
      res.writeHead(200).end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise<void>(resolve => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/backchannel-logout`, tokens, contentTypes }
}

async function signedInAppWithLogoutUri (t: Test) {
  const receiver = await logoutReceiver(t)
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { postLogoutRedirectUris: ['http://127.0.0.1:4999/bye'], backchannelLogoutUri: receiver.url })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid email')
  const jar = new CookieJar()
  let login: { accessToken: string, refreshToken?: string } | undefined
  const callback = await authorizeInBrowser(baseUrl, jar, request.url, { person: user, onLogin: (answer) => { login = answer } })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  if (login === undefined) throw new Error('no sign-in')
  return { receiver, server, baseUrl, user, app, config, jar, tokens, login }
}

/** Verifies a logout token as the app must (Back-Channel Logout §2.6): signature by the JWKS, iss, aud, events, sub or sid, no nonce. */
async function verifiedLogoutToken (t: Test, token: string, baseUrl: string, clientId: string): Promise<JWTPayload> {
  const jwks = createLocalJWKSet(await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json())
  const { payload } = await jwtVerify(token, jwks, { issuer: baseUrl, audience: clientId })
  t.equal(decodeProtectedHeader(token).typ, 'logout+jwt', 'typed as a logout token')
  t.same(payload.events, { [LOGOUT_EVENT]: {} }, 'the back-channel logout event')
  t.ok(typeof payload.sub === 'string' || typeof payload.sid === 'string', 'a sub or a sid')
  t.equal(payload.nonce, undefined, 'no nonce')
  t.type(payload.jti, 'string')
  t.type(payload.iat, 'number')
  return payload
}

t.test('discovery says back-channel logout is supported, with sid', async (t) => {
  const { baseUrl } = await providerService(t)
  const discovery = await (await fetch(`${baseUrl}/.well-known/openid-configuration`)).json()
  t.equal(discovery.backchannel_logout_supported, true)
  t.equal(discovery.backchannel_logout_session_supported, true)
})

t.test('RP-initiated logout: the app hears it, signed, with the user and the browser session\'s sid', async (t) => {
  const { receiver, baseUrl, user, app, jar, tokens } = await signedInAppWithLogoutUri(t)
  const logout = new URL(`${baseUrl}/oauth/logout`)
  logout.searchParams.set('id_token_hint', String(tokens.id_token))
  logout.searchParams.set('post_logout_redirect_uri', 'http://127.0.0.1:4999/bye')
  const confirmed = await logOutInBrowser(baseUrl, jar, logout.href)
  t.equal(confirmed.status, 303, 'the browser goes back to the app')
  t.match(confirmed.headers.get('location'), /^http:\/\/127\.0\.0\.1:4999\/bye/)

  t.ok(await eventually(() => receiver.tokens.length > 0), 'a logout token was POSTed')
  t.equal(receiver.contentTypes[0], 'application/x-www-form-urlencoded')
  const payload = await verifiedLogoutToken(t, receiver.tokens[0], baseUrl, app.clientId)
  t.equal(payload.sub, String(user.id))
  t.type(payload.sid, 'string', 'the browser session\'s sid')
  await new Promise(resolve => setTimeout(resolve, 400))
  t.equal(receiver.tokens.length, 1, 'once, though the grant\'s revocation is read from the log too')
})

t.test('sign-out everywhere (/auth/logout-all): the app hears it', async (t) => {
  const { receiver, server, baseUrl, user, app, login } = await signedInAppWithLogoutUri(t)
  const out = await server.inject({ method: 'POST', url: '/auth/logout-all', headers: { authorization: `Bearer ${login.accessToken}` }, payload: { refreshToken: login.refreshToken } })
  t.equal(out.statusCode, 204)
  t.ok(await eventually(() => receiver.tokens.length > 0), 'a logout token was POSTed')
  const payload = await verifiedLogoutToken(t, receiver.tokens[0], baseUrl, app.clientId)
  t.equal(payload.sub, String(user.id))
  await new Promise(resolve => setTimeout(resolve, 400))
  t.equal(receiver.tokens.length, 1, 'once')
})

t.test('an operator disables the user: the app hears it', async (t) => {
  const { receiver, server, baseUrl, user, app } = await signedInAppWithLogoutUri(t)
  // The admin API and `account-service users disable` end the sessions through this store method.
  t.ok(await server.store.disableUser(user.id, new Date()))
  t.ok(await eventually(() => receiver.tokens.length > 0), 'a logout token was POSTed')
  const payload = await verifiedLogoutToken(t, receiver.tokens[0], baseUrl, app.clientId)
  t.equal(payload.sub, String(user.id))
})

t.test('the user removes the app under "Apps with access": the app hears it', async (t) => {
  const { receiver, server, baseUrl, user, app, login } = await signedInAppWithLogoutUri(t)
  const removed = await server.inject({ method: 'DELETE', url: `/auth/apps/${app.clientId}`, headers: { authorization: `Bearer ${login.accessToken}` } })
  t.equal(removed.statusCode, 204)
  t.ok(await eventually(() => receiver.tokens.length > 0), 'a logout token was POSTed')
  const payload = await verifiedLogoutToken(t, receiver.tokens[0], baseUrl, app.clientId)
  t.equal(payload.sub, String(user.id))
})

t.test('an app that never answers neither fails nor holds up the sign-out', async (t) => {
  // The app's endpoint takes the delivery and never answers; whether its connection was given up is kept.
  const delivery: { arrived: boolean, closedAt?: number } = { arrived: false }
  const silent = createServer((request) => {
    delivery.arrived = true
    request.socket.once('close', () => { delivery.closedAt = Date.now() })
  })
  silent.listen(0, '127.0.0.1')
  await once(silent, 'listening')
  t.teardown(() => new Promise<void>(resolve => { silent.closeAllConnections(); silent.close(() => resolve()) }))
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { backchannelLogoutUri: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/logout` })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid')
  let login: { accessToken: string, refreshToken?: string } | undefined
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user, onLogin: (answer) => { login = answer } })
  await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  const out = await server.inject({ method: 'POST', url: '/auth/logout-all', headers: { authorization: `Bearer ${login?.accessToken ?? ''}` }, payload: { refreshToken: login?.refreshToken } })
  const answeredAt = Date.now()
  t.equal(out.statusCode, 204, 'the sign-out answers as ever')
  // A sign-out that waited for the delivery would answer as the delivery gives up (2.5 s after it started), its
  // connection closing at the same moment; one that does not wait answers seconds before that close.
  await eventually(() => delivery.closedAt !== undefined, 300)
  t.ok(delivery.closedAt === undefined || delivery.closedAt - answeredAt > 1000, 'without waiting for the app: the delivery was still open when the sign-out answered')
  t.ok(await eventually(() => delivery.arrived, 5000), 'the app was told (and never answered)')
})

t.test('clients are registered with a backchannel_logout_uri (RFC 7591)', async (t) => {
  const { baseUrl } = await providerService(t, { env: { OAUTH_REGISTRATION_TOKEN: 'registration-token-0123456789' } })
  const answer = await fetch(`${baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer registration-token-0123456789' },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI], backchannel_logout_uri: 'https://app.example/backchannel-logout', backchannel_logout_session_required: true })
  })
  t.equal(answer.status, 201)
  const registered = await answer.json()
  t.equal(registered.backchannel_logout_uri, 'https://app.example/backchannel-logout')
  t.equal(registered.backchannel_logout_session_required, true)
})

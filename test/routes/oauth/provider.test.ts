import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list'
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, oauthErrorOf, authorizationRequest, authorizeInBrowser, CookieJar, providerService, REDIRECT_URI, relyingParty } from '../../fixtures/oauth.js'

// The service as an OAuth 2.1 / OpenID provider, with openid-client as the app. The browser's steps
// are driven over HTTP here (test/e2e/oauth-browser.test.ts drives the pages in Chromium).

async function signedInApp (t: Test, options: Parameters<typeof addClient>[1] = {}, scope = 'openid email profile offline_access', redirectUri = REDIRECT_URI) {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Grace', last_name: 'Hopper' })
  const app = await addClient(server, { grants: ['authorization_code', 'refresh_token'], ...options })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, scope, { redirect_uri: redirectUri, ...(scope.includes('offline_access') ? { prompt: 'consent' } : {}) })
  const jar = new CookieJar()
  const callback = await authorizeInBrowser(baseUrl, jar, request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  return { server, baseUrl, user, app, config, tokens, jar, callback, request }
}

t.test('discovery names the issuer (PUBLIC_URL) and the endpoints; PKCE is S256 only', async (t) => {
  const { baseUrl } = await providerService(t)
  const discovery = await (await fetch(`${baseUrl}/.well-known/openid-configuration`)).json()
  t.equal(discovery.issuer, baseUrl)
  t.equal(discovery.jwks_uri, `${baseUrl}/.well-known/jwks.json`, 'one JWKS for everything the service signs')
  t.same(discovery.code_challenge_methods_supported, ['S256'])
  t.same(discovery.response_types_supported, ['code'], 'no implicit or hybrid flow')
  t.ok(discovery.device_authorization_endpoint)
  t.ok(discovery.introspection_endpoint)
  t.ok(discovery.revocation_endpoint)
  t.ok(discovery.end_session_endpoint)
  t.equal(discovery.registration_endpoint, undefined, 'no dynamic registration without OAUTH_REGISTRATION_TOKEN')
  t.same(discovery.id_token_signing_alg_values_supported, ['RS256', 'EdDSA'])
  t.same(discovery.scopes_supported.sort(), ['email', 'offline_access', 'openid', 'organizations', 'profile'])
})

t.test('a Host no URL can hold is the client\'s error (400 invalid_request), not the provider\'s (500)', async (t) => {
  const { server } = await providerService(t)
  for (const host of ['exa mple', '[::1', 'a:b:c']) {
    for (const url of ['/.well-known/openid-configuration', '/oauth/jwks']) {
      const answer = await server.inject({ method: 'GET', url, headers: { host } })
      t.equal(answer.statusCode, 400, `${url} with Host ${JSON.stringify(host)}`)
      t.equal(answer.json().error, 'invalid_request')
    }
  }
  const fine = await server.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: { host: 'localhost:3000' } })
  t.equal(fine.statusCode, 200, 'a host name with a port is served')
  const after = await server.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: { host: 'exa mple' } })
  t.equal(after.statusCode, 400, 'a bad Host after a good one is still refused (the last good host is remembered, nothing else)')
  const forwarded = await server.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: { 'x-forwarded-host': 'a b' } })
  t.equal(forwarded.statusCode, 200, 'X-Forwarded-Host is not read where no proxy is trusted')

  const { server: proxied } = await providerService(t, { env: { TRUST_PROXY: 'true' } })
  const refused = await proxied.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: { 'x-forwarded-host': 'a b, proxy.example' } })
  t.equal(refused.statusCode, 400, 'behind a trusted proxy, the first X-Forwarded-Host is the one read')
})

t.test('code + PKCE: the app gets an ID token of the user, an RFC 9068 access token with a status list entry, and userinfo', async (t) => {
  const { baseUrl, user, app, config, tokens } = await signedInApp(t)
  const idClaims = tokens.claims()
  t.equal(idClaims?.sub, String(user.id), 'sub is the user id')
  t.equal(idClaims?.iss, baseUrl)
  t.equal(idClaims?.aud, app.clientId)

  t.equal(decodeProtectedHeader(tokens.access_token).typ, 'at+jwt')
  const jwks = await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()
  const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(jwks), { issuer: baseUrl, typ: 'at+jwt' })
  t.equal(payload.sub, String(user.id))
  t.equal(payload.client_id, app.clientId)
  t.match(payload.status, { status_list: { idx: Number, uri: `${baseUrl}/statuslists/1` } }, 'the same status list reference as the service\'s own tokens')

  const userinfo = await client.fetchUserInfo(config, tokens.access_token, String(user.id))
  t.match(userinfo, { sub: String(user.id), email: user.email, email_verified: false, given_name: 'Grace', family_name: 'Hopper' })
  t.ok(tokens.refresh_token, 'offline_access with prompt=consent gives a refresh token')
})

t.test('a confidential client refreshes; a public client\'s refresh token rotates and a used one is refused, ending the grant', async (t) => {
  const confidential = await signedInApp(t)
  const refreshed = await client.refreshTokenGrant(confidential.config, confidential.tokens.refresh_token as string)
  t.ok(refreshed.access_token)

  const { config, tokens } = await signedInApp(t, { public: true })
  const first = tokens.refresh_token as string
  const rotated = await client.refreshTokenGrant(config, first)
  t.not(rotated.refresh_token, first, 'rotated')
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, first)), 'invalid_grant', 'the used one is refused')
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, rotated.refresh_token as string)), 'invalid_grant', 'and reuse ended the grant: its newest token too')
})

t.test('consent denied: the app gets access_denied and no code', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server))
  const request = await authorizationRequest(config)
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user, consent: false })
  t.equal(callback.searchParams.get('error'), 'access_denied')
  t.equal(callback.searchParams.get('code'), null)
})

t.test('single sign-on: a second app signs in without the password, asking only its own consent; a trusted app asks none', async (t) => {
  const { server, baseUrl, jar, user } = await signedInApp(t)
  const second = await relyingParty(baseUrl, await addClient(server, { name: 'Second App' }))
  const steps: string[] = []
  const request = await authorizationRequest(second)
  const callback = await authorizeInBrowser(baseUrl, jar, request.url, { onStep: step => steps.push(step) })
  t.same(steps, ['consent'], 'no sign-in step')
  const tokens = await client.authorizationCodeGrant(second, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.sub, String(user.id))

  const trusted = await relyingParty(baseUrl, await addClient(server, { name: 'First-party', trusted: true }))
  const trustedSteps: string[] = []
  const again = await authorizationRequest(trusted)
  const arrived = await authorizeInBrowser(baseUrl, jar, again.url, { onStep: step => trustedSteps.push(step) })
  t.same(trustedSteps, [], 'no consent page for a trusted app')
  t.ok(arrived.searchParams.get('code'))
})

t.test('client credentials: a machine client gets an access token of its own', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { grants: ['client_credentials'], redirectUris: [] })
  const config = await relyingParty(baseUrl, app)
  const tokens = await client.clientCredentialsGrant(config)
  const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()), { issuer: baseUrl })
  t.equal(payload.client_id, app.clientId)
  t.equal(payload.sub, app.clientId)
  t.equal(await oauthErrorOf(client.clientCredentialsGrant(await relyingParty(baseUrl, { ...app, clientSecret: 'wrong' }))), 'invalid_client', 'a wrong secret is refused')
})

t.test('introspection and revocation: an access token is active until its grant is revoked, for its own client only', async (t) => {
  const { server, baseUrl, config, tokens } = await signedInApp(t)
  const active = await client.tokenIntrospection(config, tokens.access_token)
  t.match(active, { active: true, sub: tokens.claims()?.sub, scope: 'openid email profile offline_access' })
  t.match(await client.tokenIntrospection(config, tokens.refresh_token as string), { active: true })

  const other = await relyingParty(baseUrl, await addClient(server, { name: 'Other' }))
  t.match(await client.tokenIntrospection(other, tokens.access_token), { active: false }, 'another client learns nothing of it')

  await client.tokenRevocation(config, tokens.refresh_token as string)
  t.match(await client.tokenIntrospection(config, tokens.refresh_token as string), { active: false })
  t.match(await client.tokenIntrospection(config, tokens.access_token), { active: false }, 'revoking the refresh token revoked the grant')
  await t.rejects(client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck), 'userinfo refuses it')
})

t.test('signing out everywhere ends the apps\' grants: refresh fails and the status list marks the access token', async (t) => {
  const { server, baseUrl, user, config, tokens } = await signedInApp(t)
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  const out = await server.inject({ method: 'POST', url: '/auth/logout-all', headers: { authorization: `Bearer ${login.json().accessToken}` }, payload: { refreshToken: login.json().refreshToken } })
  t.ok(out.statusCode < 300, `logout-all answered ${out.statusCode}`)
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant')

  const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()))
  const { idx, uri } = (payload.status as { status_list: { idx: number, uri: string } }).status_list
  const list = getListFromStatusListJWT(await (await fetch(uri, { headers: { accept: 'application/statuslist+jwt' } })).text())
  t.equal(list.getStatus(idx), 1, 'the access token\'s bit is set')
})

t.test('a deleted user\'s grants end: refresh fails', async (t) => {
  const { server, user, config, tokens } = await signedInApp(t)
  t.ok(await server.store.deleteUser(user.id))
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant')
})

t.test('the authorization endpoint refuses an unregistered redirect URI and a request without PKCE; a code is good once, with its verifier', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server)
  const config = await relyingParty(baseUrl, app)

  const unregistered = await authorizationRequest(config, 'openid', { redirect_uri: 'http://127.0.0.1:4999/elsewhere' })
  const page = await fetch(unregistered.url, { redirect: 'manual' })
  t.equal(page.status, 400, 'an error page, not a redirect to the unregistered URI')
  t.match(await page.text(), /redirect_uri/)

  const withoutPkce = new URL(`${baseUrl}/oauth/authorize`)
  withoutPkce.search = new URLSearchParams({ client_id: app.clientId, response_type: 'code', scope: 'openid', redirect_uri: REDIRECT_URI, state: 'x' }).toString()
  const refused = await authorizeInBrowser(baseUrl, new CookieJar(), withoutPkce, { person: user })
  t.equal(refused.searchParams.get('error'), 'invalid_request')
  t.match(refused.searchParams.get('error_description'), /PKCE/)

  const request = await authorizationRequest(config, 'openid offline_access', { prompt: 'consent' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  t.equal(await oauthErrorOf(client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: request.state })), 'invalid_grant', 'a wrong verifier is refused')
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(await oauthErrorOf(client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })), 'invalid_grant', 'a code is good once')
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token ?? 'none')), 'invalid_grant', 'and its replay ended the grant it made')
})

t.test('dynamic registration needs the initial access token OAUTH_REGISTRATION_TOKEN', async (t) => {
  const token = 'registration-token-0123456789'
  const { baseUrl, server } = await providerService(t, { env: { OAUTH_REGISTRATION_TOKEN: token } })
  const metadata = { client_name: 'Registered', redirect_uris: [REDIRECT_URI] }
  const without = await fetch(`${baseUrl}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) })
  t.equal(without.status, 401)
  const wrong = await fetch(`${baseUrl}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer not-the-token-0123456789' }, body: JSON.stringify(metadata) })
  t.equal(wrong.status, 401)

  const registered = await client.dynamicClientRegistration(new URL(baseUrl), metadata, undefined, { initialAccessToken: token, execute: [client.allowInsecureRequests] })
  const { client_id: clientId, client_secret: clientSecret } = registered.clientMetadata()
  t.ok(clientId)
  const stored = await server.store.findOAuthModel('Client', clientId, new Date())
  t.not(stored?.payload.client_secret, clientSecret, 'the secret is not stored as it is')
  const user = await registerUser(server, 'header')
  const request = await authorizationRequest(registered)
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(registered, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.sub, String(user.id), 'the registered app signs people in, its secret checked against the stored hash')
})

t.test('CORS: a public client\'s registered origin may call the token endpoint from the browser; another origin may not', async (t) => {
  const { baseUrl, tokens, app } = await signedInApp(t, { public: true, redirectUris: ['https://spa.example/callback'] }, 'openid offline_access', 'https://spa.example/callback')
  const refresh = (origin: string) => fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: app.clientId })
  })
  const allowed = await refresh('https://spa.example')
  t.equal(allowed.status, 200)
  t.equal(allowed.headers.get('access-control-allow-origin'), 'https://spa.example')
  const other = await refresh('https://evil.example')
  t.not(other.headers.get('access-control-allow-origin'), 'https://evil.example', 'no CORS answer for an origin the app did not register')
})

t.test('the token endpoint limits each client (RATE_LIMIT_OAUTH_TOKEN_MAX per window): 429, and another client is not held back', async (t) => {
  const { server, baseUrl } = await providerService(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_OAUTH_TOKEN_MAX: '3' } })
  const busy = await relyingParty(baseUrl, await addClient(server, { grants: ['client_credentials'], redirectUris: [] }))
  const quiet = await relyingParty(baseUrl, await addClient(server, { grants: ['client_credentials'], redirectUris: [] }))
  for (let i = 0; i < 3; i++) await client.clientCredentialsGrant(busy)
  const limited = await oauthErrorOf(client.clientCredentialsGrant(busy))
  t.not(limited, 'none', 'the fourth request in the window is refused')
  t.ok(await client.clientCredentialsGrant(quiet), 'another client still gets tokens')
})

t.test('a password change ends the apps\' grants too', async (t) => {
  const { server, user, config, tokens } = await signedInApp(t)
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  const changed = await server.inject({
    method: 'POST',
    url: '/auth/change-password',
    headers: { authorization: `Bearer ${login.json().accessToken}` },
    payload: { current_password: user.password, new_password: 'a brand new passphrase 2026' }
  })
  t.ok(changed.statusCode < 300, `change-password answered ${changed.statusCode}`)
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant')
})

t.test('GET /auth/apps lists the app with its scopes; DELETE revokes it and records the events; /auth/sessions shows no app', async (t) => {
  const { server, user, app, config, tokens } = await signedInApp(t)
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  const headers = { authorization: `Bearer ${login.json().accessToken}` }
  const listed = await server.inject({ method: 'GET', url: '/auth/apps', headers })
  t.match(listed.json(), { apps: [{ client_id: app.clientId, name: 'Test App', scopes: ['openid', 'email', 'profile', 'offline_access'] }] })
  const sessions = await server.inject({ method: 'GET', url: '/auth/sessions', headers })
  t.notOk(sessions.json().some((session: { id: string }) => session.id.startsWith('oauth.')), 'an app\'s grant is listed as an app, not as a session')

  t.equal((await server.inject({ method: 'DELETE', url: '/auth/apps/not-an-app', headers })).statusCode, 404)
  t.equal((await server.inject({ method: 'DELETE', url: `/auth/apps/${app.clientId}`, headers })).statusCode, 204)
  t.same((await server.inject({ method: 'GET', url: '/auth/apps', headers })).json(), { apps: [] })
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant')
  const events = (await server.inject({ method: 'GET', url: '/auth/security-events', headers })).json().events.map((event: { type: string }) => event.type)
  t.ok(events.includes('oauth_consent_granted') && events.includes('oauth_consent_revoked'), `events: ${events.join(', ')}`)
})

t.test('after the signing keys rotate, ID tokens and access tokens are signed by the new keys, and all verify with the one JWKS', async (t) => {
  const { server, baseUrl, config, tokens } = await signedInApp(t)
  const before = decodeProtectedHeader(tokens.id_token as string).kid
  const { rotateSigningKeys } = await import('../../../core/tokens/keys.js')
  const [service, rs256] = await rotateSigningKeys(server.store, { sealer: undefined, now: new Date() })
  await server.accessTokens.reloadKeys()
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string)
  const after = decodeProtectedHeader(refreshed.id_token as string).kid
  t.not(after, before, 'signed by the new key')
  t.equal(after, rs256.kid, 'the new RS256 key')
  t.equal(decodeProtectedHeader(refreshed.access_token).kid, service.kid, 'the access token by the new key of the service')
  const jwks = createLocalJWKSet(await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json())
  await jwtVerify(refreshed.id_token as string, jwks)
  await jwtVerify(tokens.id_token as string, jwks)
  t.pass('both verify')
})

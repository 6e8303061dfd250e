import * as oauth from 'oauth4webapi'
import t from 'tap'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizeInBrowser, CookieJar, providerService, REDIRECT_URI } from '../fixtures/oauth.js'
import { logOutInBrowser } from '../fixtures/relying-parties.js'

// oauth4webapi (panva's low-level OAuth 2 / OpenID Connect client) as an app would use it, with its
// defaults: discovery, code + PKCE S256 + state + nonce, the ID token checked, refresh, userinfo,
// revocation, RP-initiated logout. Only allowInsecureRequests differs: the test service is plain HTTP.

const insecure = { [oauth.allowInsecureRequests]: true }

t.test('oauth4webapi: code flow, refresh, userinfo, revocation and logout', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Ada', last_name: 'Lovelace' })
  const app = await addClient(server, { postLogoutRedirectUris: ['http://127.0.0.1:4999/bye'] })
  const issuer = new URL(baseUrl)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }))
  const client: oauth.Client = { client_id: app.clientId }
  const clientAuth = oauth.ClientSecretBasic(app.clientSecret as string)

  const codeVerifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const nonce = oauth.generateRandomNonce()
  const authorizationUrl = new URL(String(as.authorization_endpoint))
  for (const [name, value] of Object.entries({
    client_id: app.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'openid email profile offline_access',
    prompt: 'consent',
    code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce
  })) authorizationUrl.searchParams.set(name, value)

  const jar = new CookieJar()
  const callback = await authorizeInBrowser(baseUrl, jar, authorizationUrl, { person: user })
  const params = oauth.validateAuthResponse(as, client, callback, state)
  const exchanged = await oauth.processAuthorizationCodeResponse(as, client,
    await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT_URI, codeVerifier, insecure),
    { expectedNonce: nonce, requireIdToken: true })
  const claims = oauth.getValidatedIdTokenClaims(exchanged)
  t.equal(claims?.sub, String(user.id), 'the ID token names the user')
  t.equal(claims?.iss, baseUrl)
  t.equal(exchanged.token_type, 'bearer')
  t.ok(exchanged.refresh_token, 'a refresh token (offline_access, prompt=consent)')

  const userinfo = await oauth.processUserInfoResponse(as, client, String(user.id), await oauth.userInfoRequest(as, client, exchanged.access_token, insecure))
  t.match(userinfo, { sub: String(user.id), email: user.email, given_name: 'Ada', family_name: 'Lovelace' })

  const refreshed = await oauth.processRefreshTokenResponse(as, client,
    await oauth.refreshTokenGrantRequest(as, client, clientAuth, exchanged.refresh_token as string, insecure))
  t.ok(refreshed.access_token, 'refreshed')
  t.equal(oauth.getValidatedIdTokenClaims(refreshed)?.sub ?? String(user.id), String(user.id))
  const again = await oauth.processUserInfoResponse(as, client, String(user.id), await oauth.userInfoRequest(as, client, refreshed.access_token, insecure))
  t.equal(again.sub, String(user.id), 'userinfo with the refreshed token')

  // RP-initiated logout with the ID token as the hint: the logout page's form, then back to the app.
  const logout = new URL(String(as.end_session_endpoint))
  logout.searchParams.set('id_token_hint', String(exchanged.id_token))
  logout.searchParams.set('post_logout_redirect_uri', 'http://127.0.0.1:4999/bye')
  logout.searchParams.set('state', 'after-logout')
  const back = await logOutInBrowser(baseUrl, jar, logout.href)
  t.equal(back.headers.get('location'), 'http://127.0.0.1:4999/bye?state=after-logout', 'back at the app, with its state')

  // The browser is signed out of the provider: a silent authorization (prompt=none) is login_required.
  const silent = new URL(authorizationUrl)
  silent.searchParams.set('prompt', 'none')
  silent.searchParams.set('scope', 'openid')
  const answer = await authorizeInBrowser(baseUrl, jar, silent)
  const outcome = (() => {
    try {
      oauth.validateAuthResponse(as, client, answer, state)
      return 'a code'
    } catch (error) { return (error as { error?: string }).error }
  })()
  t.equal(outcome, 'login_required', 'prompt=none after the logout')

  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, refreshed.access_token, insecure))
  t.pass('revocation answered as RFC 7009 says')
})

t.test('oauth4webapi: a pushed authorization request (RFC 9126), then the code flow with its request_uri', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server)
  const issuer = new URL(baseUrl)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }))
  t.equal(as.pushed_authorization_request_endpoint, `${baseUrl}/oauth/par`, 'discovery names the PAR endpoint')
  const client: oauth.Client = { client_id: app.clientId }
  const clientAuth = oauth.ClientSecretBasic(app.clientSecret as string)
  const codeVerifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const pushed = await oauth.processPushedAuthorizationResponse(as, client, await oauth.pushedAuthorizationRequest(as, client, clientAuth, {
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'openid email',
    code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state
  }, insecure))
  t.match(pushed.request_uri, /^urn:ietf:params:oauth:request_uri:/)
  t.type(pushed.expires_in, 'number')

  const authorizationUrl = new URL(String(as.authorization_endpoint))
  authorizationUrl.searchParams.set('client_id', app.clientId)
  authorizationUrl.searchParams.set('request_uri', pushed.request_uri)
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), authorizationUrl, { person: user })
  const params = oauth.validateAuthResponse(as, client, callback, state)
  const exchanged = await oauth.processAuthorizationCodeResponse(as, client,
    await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT_URI, codeVerifier, insecure), { requireIdToken: true })
  t.equal(oauth.getValidatedIdTokenClaims(exchanged)?.sub, String(user.id), 'signed in through the pushed request')
})

import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { UNVERIFIED_EMAIL_RECHECK_MS } from '../../../core/users/user-cache.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, providerService, relyingParty } from '../../fixtures/oauth.js'

// Issue 34: userinfo with an app's JWT access token is a token check and a user read, as GET /users/:id
// is, served by the service's own route (its cost is a bench row: bench/scenarios.ts oauth-userinfo);
// what a relying party sees of it stays as it was.

async function signedInApp (t: Test, redirectUri = 'http://127.0.0.1:4999/callback', clock?: TestClock) {
  const { server, baseUrl } = await providerService(t, { clock })
  const user = await registerUser(server, 'header', { first_name: 'Grace', last_name: 'Hopper' })
  const app = await addClient(server, { redirectUris: [redirectUri], public: true })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid email profile', { redirect_uri: redirectUri })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  return { server, baseUrl, user, tokens }
}

t.test('userinfo answers an app\'s token with the scopes\' claims, no-store; a bad token 401 with WWW-Authenticate; a browser\'s call gets its origin\'s CORS', async (t) => {
  const { baseUrl, user, tokens } = await signedInApp(t, 'https://spa.example/callback')
  const good = await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  t.equal(good.status, 200)
  t.equal(good.headers.get('cache-control'), 'no-store')
  t.match(good.headers.get('content-type'), /^application\/json/)
  t.same(await good.json(), { sub: String(user.id), email: user.email, email_verified: false, given_name: 'Grace', family_name: 'Hopper' })

  const bad = await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token.slice(0, -2)}xx` } })
  t.equal(bad.status, 401)
  t.match(bad.headers.get('www-authenticate'), /^Bearer realm=".*", error="invalid_token"/)
  t.same(await bad.json(), { error: 'invalid_token', error_description: 'invalid token provided' })

  const browser = await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}`, origin: 'https://spa.example' } })
  t.equal(browser.status, 200)
  t.equal(browser.headers.get('access-control-allow-origin'), 'https://spa.example', 'the app\'s registered origin')
  const other = await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}`, origin: 'https://evil.example' } })
  t.comment(`another origin: ${other.status}, access-control-allow-origin ${other.headers.get('access-control-allow-origin')}`)
})

t.test('a verified email shows in userinfo', async (t) => {
  const clock = testClock()
  const { server, baseUrl, user, tokens } = await signedInApp(t, undefined, clock)
  const userinfo = async () => await (await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).json()
  t.equal((await userinfo()).email_verified, false)
  await server.store.updateUser(user.id, { emailVerified: true, emailVerifiedAt: new Date() })
  // An unverified email is read again after UNVERIFIED_EMAIL_RECHECK_MS (core/users/user-cache.ts), on the app's clock.
  clock.advance(UNVERIFIED_EMAIL_RECHECK_MS)
  t.equal((await userinfo()).email_verified, true)
})

t.test('a server-side app\'s userinfo call is answered by the service\'s route, not the provider\'s stack; a browser\'s call and a bad token still go to the provider', async (t) => {
  const { server, tokens } = await signedInApp(t)
  // What the provider is handed (routes/oauth forward): counted, then handled as before.
  const handled: string[] = []
  const handle = server.oauth.handle.bind(server.oauth)
  server.oauth.handle = (request, response) => { handled.push(String(request.url)); handle(request, response) }
  const userinfo = (headers: Record<string, string>) => server.inject({ method: 'GET', url: '/oauth/userinfo', headers })

  for (let i = 0; i < 3; i++) t.equal((await userinfo({ authorization: `Bearer ${tokens.access_token}` })).statusCode, 200)
  t.same(handled, [], 'three calls, none handed to the provider')
  t.equal((await userinfo({ authorization: `Bearer ${tokens.access_token}`, origin: 'https://spa.example' })).statusCode, 200)
  t.equal((await userinfo({ authorization: `Bearer ${tokens.access_token.slice(0, -2)}xx` })).statusCode, 401)
  t.same(handled, ['/oauth/userinfo', '/oauth/userinfo'], 'the browser\'s call (its CORS) and the bad token (its WWW-Authenticate) are the provider\'s')
})

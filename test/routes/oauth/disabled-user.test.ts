import * as client from 'openid-client'
import t from 'tap'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, oauthErrorOf, authorizationRequest, authorizeInBrowser, CookieJar, providerService, REDIRECT_URI, relyingParty } from '../../fixtures/oauth.js'

// An operator disables a user who signed in to an app through the service (the OAuth provider):
// the app's grant ends with the user's sessions, and no new authorization is given.

t.test('a disabled user\'s app refresh token fails, and a new authorization (single sign-on included) is refused', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { grants: ['authorization_code', 'refresh_token'] })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid email offline_access', { redirect_uri: REDIRECT_URI, prompt: 'consent' })
  const jar = new CookieJar()
  const callback = await authorizeInBrowser(baseUrl, jar, request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.ok(tokens.refresh_token)

  t.equal(await server.store.disableUser(user.id, new Date()), 2, 'the login\'s session and the app\'s grant')
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant', 'the app\'s refresh token fails')
  await t.rejects(client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck), 'userinfo refuses its access token')

  // The browser still holds the provider's session cookie: single sign-on must not give a code.
  const again = await authorizationRequest(config, 'openid email')
  const steps: string[] = []
  const outcome = await authorizeInBrowser(baseUrl, jar, again.url, { person: user, onStep: (step) => steps.push(step) })
    .then((url) => `ended at ${url.href}`, (error: Error) => error.message)
  t.notMatch(outcome, /[?&]code=/, 'no authorization code')
  t.same(steps.slice(0, 1), ['login'], 'the provider asks for a sign-in again: the disabled account is no account to it')
  t.match(outcome, /login answered 403.*ACCOUNT_DISABLED/, 'and the sign-in answers ACCOUNT_DISABLED')
})

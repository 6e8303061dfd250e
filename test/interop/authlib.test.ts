import t from 'tap'
import { registerUser } from '../fixtures/factories.js'
import { addClient, providerService, REDIRECT_URI } from '../fixtures/oauth.js'
import { debianPackages, logOutInBrowser, signInWithExternalApp, succeeds } from '../fixtures/relying-parties.js'

// Python's Authlib (Debian's python3-authlib) as the app, with its defaults: test/interop/authlib-client.py.
// Debian's Python runs it, where Debian's package puts the library; where it is missing the test installs it
// with apt (as .ci/run does), or skips, saying so, where there is no apt.

const PYTHON = '/usr/bin/python3'
const SCRIPT = new URL('./authlib-client.py', import.meta.url).pathname
const POST_LOGOUT = 'http://127.0.0.1:4999/bye'

const missing = debianPackages(['python3-authlib', 'python3-requests'], () => succeeds(PYTHON, ['-c', 'import authlib, requests']))

t.test('Authlib: code flow with PKCE, the ID token verified, userinfo, refresh, revocation, logout', { skip: missing }, async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Guido', last_name: 'Rossum' })
  const app = await addClient(server, { postLogoutRedirectUris: [POST_LOGOUT] })
  const { result, jar } = await signInWithExternalApp(t, baseUrl, user, PYTHON, [SCRIPT, baseUrl, app.clientId, app.clientSecret as string, REDIRECT_URI, POST_LOGOUT])
  t.equal(result.id_token.sub, String(user.id), 'the ID token verified by Authlib names the user')
  t.equal(result.id_token.iss, baseUrl)
  t.match(result.userinfo, { sub: String(user.id), email: user.email, given_name: 'Guido', family_name: 'Rossum' })
  t.equal(result.refreshed, true, 'the refresh token grant')
  t.equal(result.userinfo_after_refresh.sub, String(user.id), 'userinfo with the refreshed token')
  t.equal(result.revocation_status, 200, 'revocation')

  const back = await logOutInBrowser(baseUrl, jar, result.logout)
  t.equal(back.headers.get('location'), `${POST_LOGOUT}?state=authlib`, 'RP-initiated logout with Authlib\'s ID token as the hint')
})

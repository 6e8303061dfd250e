import * as client from 'openid-client'
import t from 'tap'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, browse, CookieJar, providerService, relyingParty } from '../../fixtures/oauth.js'

// Issue 34, item 7: the authorization endpoint (OpenID Connect Core §3.1.2.1) and the logout endpoint
// (RP-Initiated Logout §2) take POST as well as GET: a form posted there goes on as the same request by GET.

const LOGGED_OUT = 'http://127.0.0.1:4999/logged-out'
const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' }

t.test('POST /oauth/authorize with the parameters as a form leads to the sign-in as GET does, and on to a code', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const person = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server))
  const request = await authorizationRequest(config, 'openid email')
  const jar = new CookieJar()

  const posted = await browse(jar, `${baseUrl}/oauth/authorize`, { method: 'POST', headers: formHeaders, body: request.url.searchParams.toString() })
  t.equal(posted.status, 303, 'See Other: the browser goes on by GET')
  const location = new URL(posted.headers.get('location') ?? '', baseUrl)
  t.equal(location.pathname, '/oauth/authorize')
  t.same(Object.fromEntries(location.searchParams), Object.fromEntries(request.url.searchParams), 'with the form\'s parameters')

  const steps: string[] = []
  const callback = await authorizeInBrowser(baseUrl, jar, location, { person, onStep: step => steps.push(step) })
  t.same(steps, ['login', 'consent'], 'the same interaction as a GET')
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.sub, String(person.id))

  const notAForm = await fetch(`${baseUrl}/oauth/authorize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', redirect: 'manual' })
  t.equal(notAForm.status, 400, 'a body that is not a form is refused')
  t.equal((await notAForm.json()).error, 'invalid_request')
})

t.test('POST /oauth/logout with id_token_hint and post_logout_redirect_uri: the confirmation, then back at the app with its state', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const person = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { postLogoutRedirectUris: [LOGGED_OUT] }))
  const request = await authorizationRequest(config, 'openid')
  const jar = new CookieJar()
  const callback = await authorizeInBrowser(baseUrl, jar, request.url, { person })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })

  const posted = await browse(jar, `${baseUrl}/oauth/logout`, {
    method: 'POST',
    headers: formHeaders,
    body: new URLSearchParams({ id_token_hint: tokens.id_token as string, post_logout_redirect_uri: LOGGED_OUT, state: 'bye-1' }).toString()
  })
  t.equal(posted.status, 303)
  const confirmation = await browse(jar, new URL(posted.headers.get('location') ?? '', baseUrl).href)
  t.equal(confirmation.status, 200)
  const html = await confirmation.text()
  t.match(html, /Sign out\?/, 'the logout confirmation')
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1]
  t.ok(xsrf)

  const confirmed = await browse(jar, `${baseUrl}/oauth/logout/confirm`, { method: 'POST', headers: formHeaders, body: new URLSearchParams({ xsrf: xsrf ?? '', logout: 'yes' }).toString() })
  t.equal(confirmed.status, 303)
  const back = new URL(confirmed.headers.get('location') ?? '')
  t.equal(`${back.origin}${back.pathname}`, LOGGED_OUT, 'back at the app\'s post-logout URI')
  t.equal(back.searchParams.get('state'), 'bye-1')

  // Signed out: the next authorization asks for the sign-in again.
  const steps: string[] = []
  const again = await authorizationRequest(config, 'openid')
  await authorizeInBrowser(baseUrl, jar, again.url, { person, onStep: step => steps.push(step) })
  t.equal(steps[0], 'login')
})

import { decodeProtectedHeader } from 'jose'
import * as client from 'openid-client'
import t from 'tap'
import { rotateSigningKeys } from '../../../core/tokens/keys.js'
import { testClock } from '../../fixtures/clock.js'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, browse, CookieJar, providerService, REDIRECT_URI, relyingParty } from '../../fixtures/oauth.js'

// Issue 34, item 5: an id_token_hint signed by a key that a rotation retired was refused at logout and
// with prompt=none, though ID tokens live an hour: every rotation broke logout. The retired key verifies
// (it signs nothing) until every ID token it signed has expired.

const BYE = 'http://127.0.0.1:4999/bye'

t.test('after the keys rotate, an ID token of the old key is still a good id_token_hint, for an hour', async (t) => {
  const clock = testClock()
  const { server, baseUrl } = await providerService(t, { clock })
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { postLogoutRedirectUris: [BYE] }))
  const jar = new CookieJar()
  const request = await authorizationRequest(config, 'openid')
  const callback = await authorizeInBrowser(baseUrl, jar, request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  const oldIdToken = tokens.id_token as string

  // What `account-service keys rotate` does, then the reload every instance does on its timer.
  clock.advance(1)
  const [, rs256] = await rotateSigningKeys(server.store, { now: new Date(clock.now()) })
  await server.accessTokens.reloadKeys()
  t.not(decodeProtectedHeader(oldIdToken).kid, rs256.kid, 'the hint was signed by the key now retired')

  // prompt=none with the old hint: the browser's session answers with a code, no error.
  const silent = await authorizationRequest(config, 'openid', { prompt: 'none', id_token_hint: oldIdToken })
  const silentCallback = await authorizeInBrowser(baseUrl, jar, silent.url)
  t.equal(silentCallback.origin + silentCallback.pathname, REDIRECT_URI)
  t.equal(silentCallback.searchParams.get('error'), null, `no error: ${silentCallback.searchParams.get('error_description') ?? ''}`)
  const renewed = await client.authorizationCodeGrant(config, silentCallback, { pkceCodeVerifier: silent.verifier, expectedState: silent.state })
  t.equal(decodeProtectedHeader(renewed.id_token as string).kid, rs256.kid, 'the new ID token is signed by the new key')

  // RP-initiated logout with the old hint: the page asks, and signing out returns to the app.
  const logoutUrl = client.buildEndSessionUrl(config, { id_token_hint: oldIdToken, post_logout_redirect_uri: BYE })
  const page = await browse(jar, logoutUrl.href)
  const html = await page.text()
  t.equal(page.status, 200, 'the sign-out page, not an error')
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1]
  t.ok(xsrf, 'with its form')
  const confirmed = await browse(jar, `${baseUrl}/oauth/logout/confirm`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf: xsrf ?? '', logout: 'yes' })
  })
  t.equal(confirmed.status, 303)
  t.equal(confirmed.headers.get('location'), BYE, 'back at the app')

  // An hour and a second (the clock's leeway) after its successor came, no ID token of the old key lives:
  // it verifies nothing more.
  clock.advance(3_600_000 + 2000)
  const late = await fetch(logoutUrl, { redirect: 'manual' })
  t.equal(late.status, 400, 'the hint is refused then')
  t.match(await late.text(), /id_token_hint/)
})

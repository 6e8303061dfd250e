import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import express from 'express'
import expressOpenIdConnect from 'express-openid-connect'
import t from 'tap'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizeInBrowser, browse, CookieJar, providerService } from '../fixtures/oauth.js'

const { auth, requiresAuth } = expressOpenIdConnect

// express-openid-connect (Auth0's Express middleware) as the app, with its defaults (RS256 ID tokens, PKCE,
// its /login, /callback and /logout routes) but for the code flow: its default response_type is
// id_token (the implicit flow, which OAuth 2.1 and the service leave out); `response_type: 'code'` is its
// documented setting for a confidential app. idpLogout sends the browser to the provider's logout too.

t.test('express-openid-connect: sign-in (code + PKCE), userinfo, refresh, logout at the provider', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Tim', last_name: 'Lee' })

  const site = express()
  const listener = site.listen(0, '127.0.0.1')
  await once(listener, 'listening')
  t.teardown(() => new Promise<void>(resolve => { listener.closeAllConnections(); listener.close(() => resolve()) }))
  const appBase = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`
  const app = await addClient(server, { redirectUris: [`${appBase}/callback`], postLogoutRedirectUris: [appBase] })

  site.use(auth({
    issuerBaseURL: baseUrl,
    baseURL: appBase,
    clientID: app.clientId,
    clientSecret: app.clientSecret,
    secret: 'a session secret of the test app, long enough',
    authRequired: false,
    idpLogout: true,
    // Its 5 s default times out the first discovery on a busy machine (the provider is built at first use).
    httpTimeout: 60_000,
    authorizationParams: { response_type: 'code', scope: 'openid email profile offline_access', prompt: 'consent' }
  }))
  site.get('/me', requiresAuth(), (req, res) => { res.json({ user: req.oidc.user, refreshable: req.oidc.refreshToken !== undefined }) })
  site.get('/userinfo', requiresAuth(), (req, res, next) => { req.oidc.fetchUserInfo().then((info) => res.json(info), next) })
  site.get('/refresh', requiresAuth(), (req, res, next) => {
    const token = req.oidc.accessToken
    if (token === undefined) { res.status(500).end(); return }
    token.refresh().then((fresh) => res.json({ changed: fresh.access_token !== token.access_token }), next)
  })
  site.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => { res.status(500).json({ error: error.message }) })

  const appJar = new CookieJar()
  const login = await browse(appJar, `${appBase}/login`)
  t.equal(login.status, 302, `the app sends the browser to the provider${login.status === 302 ? '' : `: ${await login.text()}`}`)
  const authorizeUrl = String(login.headers.get('location'))
  t.match(authorizeUrl, /code_challenge_method=S256/, 'with PKCE')
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), authorizeUrl, { person: user })
  t.equal(callback.origin, appBase, 'back at the app')
  const signedIn = await browse(appJar, callback.href)
  t.equal(signedIn.status, 302, `the app's callback took the code: ${signedIn.status === 302 ? '' : await signedIn.text()}`)

  const me = await (await browse(appJar, `${appBase}/me`)).json()
  t.match(me, { user: { sub: String(user.id), email: user.email }, refreshable: true }, 'the app\'s session holds the verified ID token\'s claims')
  const info = await (await browse(appJar, `${appBase}/userinfo`)).json()
  t.match(info, { sub: String(user.id), given_name: 'Tim', family_name: 'Lee' }, 'userinfo')
  const refreshed = await browse(appJar, `${appBase}/refresh`)
  t.equal(refreshed.status, 200, 'the refresh token grant')

  const logout = await browse(appJar, `${appBase}/logout`)
  t.equal(logout.status, 302)
  t.match(String(logout.headers.get('location')), `${baseUrl}/oauth/logout?`, 'idpLogout: on to the provider\'s end_session_endpoint')
})

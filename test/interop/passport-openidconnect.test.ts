import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import express from 'express'
import session from 'express-session'
import passport from 'passport'
import OpenIDConnectStrategy, { type Profile, type VerifyWithUserinfo } from 'passport-openidconnect'
import t from 'tap'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizeInBrowser, browse, CookieJar, providerService } from '../fixtures/oauth.js'

// passport-openidconnect (Jared Hanson's Passport strategy) in an Express app with express-session, with
// the options it requires and nothing else: the endpoints from discovery, the client's id and secret, a
// callback URL, a scope. It sends no PKCE (lib/strategy.js builds the authorization request from
// response_type, client_id, redirect_uri, scope and state alone), so the app is a confidential client added
// with `--pkce optional` (issue 34, item 3); it sends its secret in the token request's form (the `oauth`
// package's OAuth2: client_secret_post), reads the profile from the ID token's claims, and from userinfo
// too when the verify callback takes nine parameters (its `skipUserProfile` default). It checks the ID
// token's iss, aud, azp and exp, not its signature.

interface SignedIn { id: string, email?: string, givenName?: string, familyName?: string }

t.test('passport-openidconnect: sign-in through the provider, the profile, the session, a protected route', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Jared', last_name: 'Hanson' })
  const discovery = await (await fetch(`${baseUrl}/.well-known/openid-configuration`)).json() as Record<string, string>

  const site = express()
  const listener = site.listen(0, '127.0.0.1')
  await once(listener, 'listening')
  t.teardown(() => new Promise<void>(resolve => { listener.closeAllConnections(); listener.close(() => resolve()) }))
  const appBase = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`

  const app = await addClient(server, { redirectUris: [`${appBase}/callback`, `${appBase}/userinfo/callback`], pkce: 'optional' })
  const spa = await addClient(server, { redirectUris: [`${appBase}/public/callback`], public: true })
  const strict = await addClient(server, { redirectUris: [`${appBase}/strict/callback`] })

  // What the verify callbacks were given, by strategy: what an app's code sees of the person.
  const verified: Array<{ strategy: string, issuer: string, profile: Profile, userinfo?: Record<string, unknown> }> = []
  const signedInAs = (profile: Profile): SignedIn =>
    ({ id: profile.id, email: profile.emails?.[0]?.value, givenName: profile.name?.givenName, familyName: profile.name?.familyName })
  const authenticator = new passport.Passport()
  const options = (client: { clientId: string, clientSecret?: string }, path: string) => ({
    issuer: discovery.issuer,
    authorizationURL: discovery.authorization_endpoint,
    tokenURL: discovery.token_endpoint,
    userInfoURL: discovery.userinfo_endpoint,
    clientID: client.clientId,
    clientSecret: client.clientSecret,
    callbackURL: `${appBase}${path}/callback`,
    scope: 'openid profile email'
  })
  const strategy = (name: string, client: { clientId: string, clientSecret?: string }, path: string) =>
    new OpenIDConnectStrategy(options(client, path), (issuer, profile, done) => {
      verified.push({ strategy: name, issuer, profile })
      done(null, signedInAs(profile))
    })
  authenticator.use('oidc', strategy('oidc', app, ''))
  const verifyWithUserinfo: VerifyWithUserinfo = (issuer, userinfoProfile, idTokenProfile, _context, _idToken, _accessToken, _refreshToken, _params, done) => {
    verified.push({ strategy: 'oidc-userinfo', issuer, profile: idTokenProfile, userinfo: userinfoProfile?._json })
    done(null, signedInAs(idTokenProfile))
  }
  authenticator.use('oidc-userinfo', new OpenIDConnectStrategy(options(app, '/userinfo'), verifyWithUserinfo))
  authenticator.use('oidc-public', strategy('oidc-public', spa, '/public'))
  authenticator.use('oidc-strict', strategy('oidc-strict', strict, '/strict'))
  authenticator.serializeUser<SignedIn>((signedIn, done) => { done(null, signedIn) })
  authenticator.deserializeUser<SignedIn>((stored, done) => { done(null, stored as SignedIn) })

  site.use(session({ secret: 'a session secret of the test app, long enough', resave: false, saveUninitialized: false }))
  site.use(authenticator.initialize())
  site.use(authenticator.session())
  for (const [name, path] of [['oidc', ''], ['oidc-userinfo', '/userinfo'], ['oidc-public', '/public'], ['oidc-strict', '/strict']]) {
    site.get(`${path}/login`, authenticator.authenticate(name))
    site.get(`${path}/callback`, authenticator.authenticate(name, { successRedirect: '/me', failureRedirect: '/failed' }))
  }
  site.get('/me', (req, res) => {
    // What passport's initialize() adds to the request (its types are not installed here).
    const signedIn = req as express.Request & { isAuthenticated: () => boolean, user?: SignedIn }
    if (!signedIn.isAuthenticated()) { res.status(401).json({ signedIn: false }); return }
    res.json({ signedIn: true, user: signedIn.user })
  })
  site.use((error: Error & { code?: string }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ error: error.message, code: error.code })
  })

  /** The browser's round trip: the app's /login, the provider's pages (sign-in, consent), back to the app's callback. */
  async function signIn (path: string, appJar: CookieJar) {
    const login = await browse(appJar, `${appBase}${path}/login`)
    if (login.status !== 302) throw new Error(`the app's /login answered ${login.status}: ${await login.text()}`)
    const authorizeUrl = new URL(String(login.headers.get('location')))
    const callback = await authorizeInBrowser(baseUrl, new CookieJar(), authorizeUrl, { person: user })
    const landed = await browse(appJar, callback.href)
    return { authorizeUrl, callback, landed }
  }

  t.test('the ID token\'s claims: the verify callback\'s profile, the session, /me', async (t) => {
    const appJar = new CookieJar()
    t.equal((await browse(appJar, `${appBase}/me`)).status, 401, 'the protected route refuses a stranger')
    const { authorizeUrl, callback, landed } = await signIn('', appJar)
    t.equal(authorizeUrl.origin + authorizeUrl.pathname, discovery.authorization_endpoint)
    t.equal(authorizeUrl.searchParams.get('code_challenge'), null, 'passport-openidconnect sends no PKCE')
    t.ok(authorizeUrl.searchParams.get('state'), 'it sends a state, kept in the session')
    t.equal(callback.origin, appBase, 'the provider sent the browser back to the app')
    t.ok(callback.searchParams.get('code'), `with a code: ${callback.href}`)
    t.equal(landed.status, 302, `the app's callback took the code: ${landed.status === 302 ? '' : await landed.text()}`)
    t.equal(landed.headers.get('location'), '/me', 'passport\'s successRedirect: the sign-in succeeded')

    const seen = verified.filter(entry => entry.strategy === 'oidc')
    t.equal(seen.length, 1, 'the verify callback ran once')
    t.equal(seen[0]?.issuer, baseUrl, 'with the ID token\'s issuer')
    t.match(seen[0]?.profile, { id: String(user.id), emails: [{ value: user.email }], name: { givenName: 'Jared', familyName: 'Hanson' } },
      'and a profile from the ID token\'s claims: sub, email, the names')

    const me = await browse(appJar, `${appBase}/me`)
    t.equal(me.status, 200, 'the protected route answers the signed-in browser')
    t.same(await me.json(), { signedIn: true, user: { id: String(user.id), email: user.email, givenName: 'Jared', familyName: 'Hanson' } },
      'the session holds the user the verify callback gave')
    t.equal((await browse(new CookieJar(), `${appBase}/me`)).status, 401, 'and only for that browser')
  })

  t.test('a verify callback of nine parameters: the strategy reads userinfo with the access token too', async (t) => {
    const appJar = new CookieJar()
    const { landed } = await signIn('/userinfo', appJar)
    t.equal(landed.headers.get('location'), '/me', `signed in: ${landed.status === 302 ? '' : await landed.text()}`)
    const seen = verified.filter(entry => entry.strategy === 'oidc-userinfo')
    t.same(seen[0]?.userinfo, { sub: String(user.id), email: user.email, email_verified: false, given_name: 'Jared', family_name: 'Hanson' },
      'userinfo\'s answer, as the strategy read it')
    t.match(seen[0]?.profile, { id: String(user.id), emails: [{ value: user.email }] }, 'beside the ID token\'s profile')
    t.match(await (await browse(appJar, `${appBase}/me`)).json(), { signedIn: true, user: { id: String(user.id) } })
  })

  t.test('a client that must send PKCE is refused without it: a public client, a confidential one added without --pkce optional', async (t) => {
    for (const path of ['/public', '/strict']) {
      const appJar = new CookieJar()
      const { callback, landed } = await signIn(path, appJar)
      t.equal(callback.origin + callback.pathname, `${appBase}${path}/callback`, `${path}: back at the app`)
      t.equal(callback.searchParams.get('code'), null, `${path}: with no code`)
      t.equal(callback.searchParams.get('error'), 'invalid_request', `${path}: invalid_request`)
      t.match(callback.searchParams.get('error_description'), /PKCE/, `${path}: which names PKCE`)
      t.match(await landed.json(), { code: 'invalid_request' }, `${path}: passport-openidconnect reports the provider's error to the app`)
      t.equal((await browse(appJar, `${appBase}/me`)).status, 401, `${path}: nobody is signed in`)
    }
    t.notOk(verified.some(entry => entry.strategy === 'oidc-public' || entry.strategy === 'oidc-strict'), 'the verify callback never ran for them')
  })
})

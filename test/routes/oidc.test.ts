import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { logIn, registerUser, markEmailVerified } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'
import { codeAt, enableTotp } from '../fixtures/mfa.js'
import { hashToken } from '../../core/tokens/random-token.js'
import { CookieJar, freePort, providerSettings, startOpenIdProvider, throughProvider } from '../fixtures/openid-provider.js'
import { fragmentOf, serviceWithProvider, type ProviderService as Service } from '../fixtures/provider-service.js'

/** The PKCE pair of the app that starts the header variant's sign-ins in these tests: the #code= is exchanged with its verifier. */
const APP_VERIFIER = 'the code verifier of the test app, at least 43 characters long'
const APP_CHALLENGE = createHash('sha256').update(APP_VERIFIER).digest('base64url')
/** A start URL's query with the app's code_challenge added (the header variant requires one). */
const withChallenge = (query: string) => `${query}${query.includes('?') ? '&' : '?'}code_challenge=${APP_CHALLENGE}`

/** Start, provider login as `login`, and the service's answer at the callback. */
async function signIn (service: Service, login: string, query = '', jar = new CookieJar()): Promise<{ callback: Response, jar: CookieJar, callbackUrl: string }> {
  const { callbackUrl } = await throughProvider(`${service.baseUrl}/auth/oidc/test${service.variant === 'header' ? withChallenge(query) : query}`, jar, { login })
  if (callbackUrl === undefined) throw new Error('the sign-in did not reach the provider')
  const callback = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header() } })
  jar.take(callback.headers)
  return { callback, jar, callbackUrl }
}

async function exchange (service: Service, code: string) {
  return await service.server.inject({ method: 'POST', url: '/auth/oidc/exchange', payload: { code, code_verifier: APP_VERIFIER } })
}

async function passwordLogin (server: FastifyInstance, email: string, password: string) {
  return await server.inject({ method: 'POST', url: '/auth/login', payload: { email, password } })
}

t.test('header variant: a provider sign-in creates the account without a password, and its one-time code is exchanged once', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  service.provider.accounts.set('grace', { email: 'Grace@Example.test', email_verified: true, given_name: 'Grace', family_name: 'Hopper' })

  const providers = await service.server.inject({ method: 'GET', url: '/auth/oidc/providers' })
  t.same(providers.json(), { providers: [{ name: 'test', label: 'Test Provider' }] }, 'the console can list the sign-in buttons')

  const jar = new CookieJar()
  const start = await fetch(`${service.baseUrl}/auth/oidc/test${withChallenge('?redirect_to=/app')}`, { redirect: 'manual' })
  t.equal(start.status, 302)
  t.ok(start.headers.get('location')?.startsWith(`${service.provider.issuer}/`), 'to the provider')
  const authorization = new URL(start.headers.get('location') ?? '')
  t.equal(authorization.searchParams.get('code_challenge_method'), 'S256')
  t.ok(authorization.searchParams.get('nonce'))
  t.ok(authorization.searchParams.get('state'))
  const stateCookie = start.headers.getSetCookie().find(line => line.startsWith('oidc_state.test='))
  t.match(stateCookie, /HttpOnly/i)
  t.match(stateCookie, /SameSite=Lax/i)
  t.match(stateCookie, /Path=\/;/, 'Path=/ (its name carries the provider): test/security/cookie-prefix.test.ts')

  const { callback } = await signIn(service, 'grace', '?redirect_to=/app', jar)
  t.equal(callback.status, 303)
  t.match(callback.headers.get('location'), /^\/app#code=test\.[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}$/, 'back to redirect_to with a one-time code in the fragment')
  t.notOk(callback.headers.getSetCookie().some(line => /^(accessToken|refreshToken)=/.test(line)), 'no token cookie in the header variant')
  const code = fragmentOf(callback).get('code') ?? ''

  const first = await exchange(service, code)
  t.equal(first.statusCode, 200)
  const body = first.json()
  t.same(Object.keys(body).sort(), ['accessToken', 'refreshToken', 'user'])
  t.match(body.user, { email: 'grace@example.test', first_name: 'Grace', last_name: 'Hopper' })
  const again = await exchange(service, code)
  t.equal(again.statusCode, 400)
  t.equal(again.json().code, 'INVALID_CODE', 'a code works once')
  t.equal((await exchange(service, `test.${'A'.repeat(43)}`)).json().code, 'INVALID_CODE')

  const stored = await service.server.store.findUserById(body.user.id)
  t.equal(stored?.passwordHash, null, 'no password')
  t.equal(stored?.emailVerified, true, 'the provider verified the address')
  const other = await registerUser(service.server, 'header')
  const wrong = await passwordLogin(service.server, other.email, 'not the password')
  const none = await passwordLogin(service.server, 'grace@example.test', 'any password at all')
  t.equal(none.statusCode, 401)
  t.same(none.json(), wrong.json(), 'a password login answers exactly as a wrong password')

  const auth = { authorization: `Bearer ${body.accessToken}` }
  const listed = await service.server.inject({ method: 'GET', url: '/auth/identities', headers: auth })
  t.equal(listed.statusCode, 200)
  t.match(listed.json(), { identities: [{ provider: 'test', email: 'grace@example.test', created_at: String }] })
  const unlink = await service.server.inject({ method: 'DELETE', url: '/auth/identities/test', headers: auth })
  t.equal(unlink.statusCode, 409)
  t.equal(unlink.json().code, 'LAST_LOGIN_METHOD', 'the only way in is not removed')
  t.equal((await service.server.inject({ method: 'DELETE', url: '/auth/identities/other', headers: auth })).json().code, 'IDENTITY_NOT_FOUND')

  const second = await signIn(service, 'grace')
  t.equal(fragmentOf(second.callback).has('code'), true)
  const secondLogin = await exchange(service, fragmentOf(second.callback).get('code') ?? '')
  t.equal(secondLogin.json().user.id, body.user.id, 'the next sign-in finds the account by its identity')

  const events = (await service.server.store.listSecurityEvents(body.user.id, { limit: 10 })).map(event => `${event.type}:${String(event.detail?.method ?? event.detail?.provider ?? '')}`)
  t.ok(events.includes('identity_linked:test'), 'identity_linked recorded')
  t.ok(events.includes('login:oidc'), 'the login records its method')

  // With a password set (forgot-password, here straight in the store), the identity may go.
  await service.server.store.setPasswordHash(body.user.id, await service.server.passwords.hash('a new password 1843'), new Date())
  const unlinked = await service.server.inject({ method: 'DELETE', url: '/auth/identities/test', headers: auth })
  t.equal(unlinked.statusCode, 204)
  t.same((await service.server.inject({ method: 'GET', url: '/auth/identities', headers: auth })).json(), { identities: [] })
})

t.test('cookie variant: the callback sets the session cookies and moves on through a page of ours', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  service.provider.accounts.set('linus', { email: 'linus@example.test', email_verified: true, given_name: 'Linus', family_name: 'T', preferred_username: 'linus t!' })
  const { callback, jar } = await signIn(service, 'linus', '?redirect_to=/auth/identities')
  t.equal(callback.status, 200)
  t.match(callback.headers.get('content-type'), /^text\/html/)
  const html = await callback.text()
  t.match(html, /<meta http-equiv="refresh" content="0;url=\/auth\/identities">/, 'the page moves on to redirect_to by itself')
  const cookies = callback.headers.getSetCookie()
  t.ok(cookies.some(line => /^accessToken=.+SameSite=Strict/i.test(line)), 'access cookie set')
  t.ok(cookies.some(line => /^refreshToken=.+SameSite=Strict/i.test(line)), 'refresh cookie set')
  t.ok(cookies.some(line => /^oidc_state\.test=;/.test(line)), 'the state cookie is spent')

  const arrival = await fetch(`${service.baseUrl}/auth/identities`, { headers: { cookie: jar.header() } })
  t.equal(arrival.status, 200)
  t.match(await arrival.json(), { identities: [{ provider: 'test' }] })
  const user = await service.server.store.findUserByEmail('linus@example.test')
  t.equal(user?.username, 'linust', 'a username from preferred_username, cut to the allowed characters')

  const replay = await fetch(callback.url, { redirect: 'manual', headers: { cookie: jar.header() } })
  t.equal(replay.status, 400, 'the callback URL does not sign in twice')
})

t.test('a forged or missing state is 400 INVALID_STATE and sets nothing', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const jar = new CookieJar()
  const { callbackUrl } = await throughProvider(`${service.baseUrl}/auth/oidc/test`, jar, { login: 'victim' })
  if (callbackUrl === undefined) throw new Error('no callback')

  const forged = new URL(callbackUrl)
  forged.searchParams.set('state', 'forged-state')
  for (const [name, url, cookie] of [['a forged state', forged.href, jar.header()], ['no state cookie (another browser)', callbackUrl, ''], ['no state at all', callbackUrl.replace(/state=[^&]*&?/, ''), jar.header()]]) {
    const response = await fetch(url, { redirect: 'manual', headers: { cookie } })
    t.equal(response.status, 400, name)
    t.match(await response.json(), { statusCode: 400, code: 'INVALID_STATE', error: 'Bad Request' }, name)
    t.same(response.headers.getSetCookie(), [], `${name}: sets nothing`)
  }
  // An attacker's own state cookie does not carry a victim's callback either (login CSRF).
  const attacker = new CookieJar()
  await throughProvider(`${service.baseUrl}/auth/oidc/test`, attacker, { login: 'attacker' })
  const crossed = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: attacker.header() } })
  t.equal(crossed.status, 400)
  t.equal(await service.server.store.findUserByEmail('victim@example.test'), undefined, 'no account was made')

  const genuine = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header() } })
  t.equal(genuine.status, 200, 'the genuine callback still signs in')
})

t.test('redirect_to outside our paths and ALLOWED_ORIGINS is 400 INVALID_REDIRECT; an unknown provider is 404', async (t) => {
  const service = await serviceWithProvider(t, 'header', { ALLOWED_ORIGINS: 'https://app.example' })
  for (const target of ['//evil.example/x', 'https://evil.example/', 'https://app.example.evil.example/', '/\\evil.example', 'javascript:alert(1)', '/ok#frag', 'https://user@app.example/']) {
    const response = await service.server.inject({ method: 'GET', url: `/auth/oidc/test${withChallenge(`?redirect_to=${encodeURIComponent(target)}`)}` })
    t.equal(response.statusCode, 400, target)
    t.equal(response.json().code, 'INVALID_REDIRECT', target)
    t.equal(response.headers['set-cookie'], undefined, `${target}: no state cookie`)
  }
  for (const target of ['/account', 'https://app.example/signed-in?x=1']) {
    t.equal((await service.server.inject({ method: 'GET', url: `/auth/oidc/test${withChallenge(`?redirect_to=${encodeURIComponent(target)}`)}` })).statusCode, 302, target)
  }
  const unknown = await service.server.inject({ method: 'GET', url: `/auth/oidc/nobody${withChallenge('')}` })
  t.equal(unknown.statusCode, 404)
  t.equal(unknown.json().code, 'PROVIDER_NOT_FOUND')

  const { callback } = await signIn(service, 'ada', `?redirect_to=${encodeURIComponent('https://app.example/signed-in')}`)
  t.match(callback.headers.get('location'), /^https:\/\/app\.example\/signed-in#code=/, 'an allowed origin gets the code')
})

t.test('pre-hijacking: an account registered with the address but never verified loses its password, sessions, passkeys, TOTP and identities when the owner signs in', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  const squatter = await registerUser(service.server, 'header', { email: 'owner@example.test' })
  const squatterLogin = await logIn(service.server, 'header', squatter)
  // What a squatter sets up before the owner proves the address: a passkey, TOTP, an identity at another provider.
  const now = new Date()
  // TOTP first: with a passkey on the account, a password session could not add it (issue 33, finding 3).
  await enableTotp(service.server, 'header', squatterLogin)
  await service.server.store.createPasskey({ id: 'squatter-passkey', userId: squatter.id, credentialId: 'squatter-credential', publicKey: 'key', counter: 0, transports: [], name: 'Squatter' }, now)
  await service.server.store.linkIdentity({ provider: 'elsewhere', subject: 'squatter', userId: squatter.id, email: null }, now)
  service.provider.accounts.set('owner', { email: 'owner@example.test', email_verified: true, given_name: 'Real', family_name: 'Owner' })

  const { callback } = await signIn(service, 'owner')
  const login = (await exchange(service, fragmentOf(callback).get('code') ?? '')).json()
  t.equal(login.user.id, squatter.id, 'linked to the account with that email')
  t.ok(login.accessToken, 'signed in without the squatter\'s TOTP code')
  t.equal((await passwordLogin(service.server, squatter.email, squatter.password)).statusCode, 401, 'the squatter\'s password no longer works')
  const refresh = await service.server.inject({
    method: 'POST',
    url: '/auth/refresh-token',
    headers: { authorization: `Bearer ${squatterLogin.accessToken}`, 'x-refresh-token': `Bearer ${squatterLogin.refreshToken}` }
  })
  t.equal(refresh.statusCode, 401, 'the squatter\'s session has ended')
  t.same(await service.server.store.listPasskeys(squatter.id), [], 'the squatter\'s passkey is gone')
  t.equal(await service.server.store.findTotp(squatter.id), undefined, 'the squatter\'s TOTP is gone')
  t.equal(await service.server.store.countRecoveryCodes(squatter.id), 0, 'and its recovery codes')
  t.same((await service.server.store.listIdentities(squatter.id)).map(identity => `${identity.provider}:${identity.subject}`), ['test:owner'], 'only the owner\'s identity is linked')
  const events = await service.server.store.listSecurityEvents(squatter.id, { limit: 20 })
  t.ok(events.some(event => event.type === 'identity_linked' && event.detail?.password_cleared === true), 'the clearing is recorded')
  t.ok(events.some(event => event.type === 'passkey_removed' && event.detail?.reason === 'address_proved'), 'and the passkey\'s removal')
})

t.test('an account whose email was verified loses its password when a provider is first linked: the one signing in never showed it', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  const owner = await registerUser(service.server, 'header', { email: 'kept@example.test' })
  await markEmailVerified(service.server.store, owner.id)
  const { callback } = await signIn(service, 'kept')
  const login = (await exchange(service, fragmentOf(callback).get('code') ?? '')).json()
  t.equal(login.user.id, owner.id)
  t.equal((await passwordLogin(service.server, owner.email, owner.password)).statusCode, 401, 'the password no longer works (forgot-password sets one)')
  const auth = { authorization: `Bearer ${login.accessToken}` }
  const unlink = await service.server.inject({ method: 'DELETE', url: '/auth/identities/test', headers: auth })
  t.equal(unlink.statusCode, 409, 'with no password left, the identity is the last way in')
  t.equal(unlink.json().code, 'LAST_LOGIN_METHOD')
})

t.test('a provider email that is not verified never links to an existing account', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  const holder = await registerUser(service.server, 'header', { email: 'taken@example.test' })
  service.provider.accounts.set('mallory', { email: 'taken@example.test', email_verified: false })
  const { callback } = await signIn(service, 'mallory')
  t.equal(callback.status, 303)
  t.equal(callback.headers.get('location'), '/account#error=email_not_verified', 'refused as any unverified email is (it does not tell that an account exists)')
  t.same(await service.server.store.listIdentities(holder.id), [], 'nothing linked')
  t.equal((await passwordLogin(service.server, holder.email, holder.password)).statusCode, 200, 'the holder keeps the account')
})

t.test('a sign-in cancelled at the provider comes back to redirect_to as #error=', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  const jar = new CookieJar()
  const { callbackUrl } = await throughProvider(`${service.baseUrl}/auth/oidc/test${withChallenge('?redirect_to=/app')}`, jar, { login: 'x', cancel: true })
  if (callbackUrl === undefined) throw new Error('no callback')
  const callback = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header() } })
  t.equal(callback.status, 303)
  t.equal(callback.headers.get('location'), '/app#error=access_denied')
})

t.test('a provider that cannot be discovered at start is left out, and the others serve', async (t) => {
  const closedPort = await freePort()
  const service = await serviceWithProvider(t, 'cookie', {
    OIDC_PROVIDERS: 'test,down',
    OIDC_DOWN_ISSUER: `http://127.0.0.1:${closedPort}`,
    OIDC_DOWN_CLIENT_ID: 'x',
    OIDC_DOWN_CLIENT_SECRET: 'y',
    OIDC_DISCOVERY_TIMEOUT: '2s'
  })
  t.same((await service.server.inject({ method: 'GET', url: '/auth/oidc/providers' })).json(), { providers: [{ name: 'test', label: 'Test Provider' }] })
  t.equal((await service.server.inject({ method: 'GET', url: '/auth/oidc/down' })).statusCode, 404)
  t.equal((await service.server.inject({ method: 'GET', url: '/auth/oidc/test' })).statusCode, 302)
})

t.test('an account made by a provider sets a password through forgot-password, and may then unlink the provider', async (t) => {
  const mailbox = await startMailbox(t)
  const service = await serviceWithProvider(t, 'header', { SMTP_URL: mailbox.smtpUrl })
  const { callback } = await signIn(service, 'nopass')
  const login = (await exchange(service, fragmentOf(callback).get('code') ?? '')).json()
  const email = 'nopass@example.test'

  t.equal((await service.server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email } })).statusCode, 202)
  const token = tokenFromLink(await mailbox.next(email, 'Reset your password'), service.baseUrl, '/reset-password')
  const reset = await service.server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'a password of my own' } })
  t.equal(reset.statusCode, 204)
  t.equal((await passwordLogin(service.server, email, 'a password of my own')).statusCode, 200, 'the password now works')

  const fresh = (await passwordLogin(service.server, email, 'a password of my own')).json()
  const unlink = await service.server.inject({ method: 'DELETE', url: '/auth/identities/test', headers: { authorization: `Bearer ${fresh.accessToken}` } })
  t.equal(unlink.statusCode, 204, 'a password is left, so the identity may go')
  const events = await service.server.store.listSecurityEvents(login.user.id, { limit: 20 })
  t.ok(events.some(event => event.type === 'identity_unlinked' && event.detail?.provider === 'test'), 'identity_unlinked recorded')
})

t.test('two exchanges of one code at once: one signs in, the other is 400 INVALID_CODE', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  const { callback } = await signIn(service, 'racer')
  const code = fragmentOf(callback).get('code') ?? ''
  const answers = await Promise.all(Array.from({ length: 5 }, () => exchange(service, code)))
  t.same(answers.map(answer => answer.statusCode).sort(), [200, 400, 400, 400, 400])
})

t.test('the exchange and the sign-in start are rate-limited per client address', async (t) => {
  const service = await serviceWithProvider(t, 'header', { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '3' })
  const guesses = []
  for (let attempt = 0; attempt < 4; attempt++) guesses.push((await exchange(service, `test.${'B'.repeat(43)}`)).statusCode)
  t.same(guesses, [400, 400, 400, 429], 'codes cannot be guessed at speed')
  const starts = []
  for (let attempt = 0; attempt < 4; attempt++) starts.push((await service.server.inject({ method: 'GET', url: `/auth/oidc/test${withChallenge('')}` })).statusCode)
  t.same(starts, [302, 302, 302, 429])
})

t.test('the one-time code lives 60 seconds: an expired one is 400 INVALID_CODE', async (t) => {
  const server = await build(t, { variant: 'header' })
  const user = await registerUser(server, 'header')
  const record = await server.store.findUserById(user.id)
  if (record === undefined) throw new Error('no user')
  const code = await server.identities.issueLoginCode(record, 'test', APP_CHALLENGE)
  const issued = await server.store.findOneTimeToken(hashToken(code))
  t.equal((issued?.expiresAt.getTime() ?? 0) - (issued?.createdAt.getTime() ?? 0), 60_000, '60 s from its issue')

  const expired = 'test.expired-code'
  await server.store.issueOneTimeToken({ tokenHash: hashToken(expired), userId: user.id, purpose: 'oidc_login', email: user.email, expiresAt: new Date(Date.now() - 1) }, new Date(Date.now() - 60_001), { liveLimit: 3 })
  const answer = await server.inject({ method: 'POST', url: '/auth/oidc/exchange', payload: { code: expired } })
  t.equal(answer.statusCode, 400)
  t.equal(answer.json().code, 'INVALID_CODE')
  const reset = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token: code, new_password: 'not through a login code' } })
  t.equal(reset.json().code, 'INVALID_RESET_TOKEN', 'a live login code is no reset token')
  t.equal((await server.inject({ method: 'POST', url: '/auth/oidc/exchange', payload: { code, code_verifier: APP_VERIFIER } })).statusCode, 200, 'a live one works')
})

t.test('with both variants mounted under prefixes, each has its own callback, state cookie and cookie path', async (t) => {
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const provider = await startOpenIdProvider(t, [`${baseUrl}/v1/auth/oidc/test/callback`, `${baseUrl}/v2/auth/oidc/test/callback`])
  const server = await build(t, {
    mounts: [{ variant: 'header', prefix: '/v1' }, { variant: 'cookie', prefix: '/v2' }],
    env: { PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', OIDC_PROVIDERS: 'test', ...providerSettings('test', provider) }
  })
  await server.listen({ port, host: 'localhost' })

  const headerJar = new CookieJar()
  const header = await throughProvider(`${baseUrl}/v1/auth/oidc/test${withChallenge('?redirect_to=/app')}`, headerJar, { login: 'both' })
  t.match(header.start.headers.getSetCookie().join(), /^oidc_state\.v1\.test=[^;]+; .*Path=\//, 'a state cookie named for the /v1 mount\'s callback')
  t.ok(header.callbackUrl?.startsWith(`${baseUrl}/v1/auth/oidc/test/callback?`))
  const headerCallback = await fetch(header.callbackUrl ?? '', { redirect: 'manual', headers: { cookie: headerJar.header() } })
  t.match(headerCallback.headers.get('location'), /^\/app#code=/)

  const cookieJar = new CookieJar()
  const cookie = await throughProvider(`${baseUrl}/v2/auth/oidc/test`, cookieJar, { login: 'both' })
  const cookieCallback = await fetch(cookie.callbackUrl ?? '', { redirect: 'manual', headers: { cookie: cookieJar.header() } })
  t.equal(cookieCallback.status, 200)
  t.ok(cookieCallback.headers.getSetCookie().some(line => /^refreshToken=.*Path=\/v2\/auth/.test(line)), 'the session cookies of the /v2 mount')
  t.equal((await server.store.listUsers({ limit: 10 })).length, 1, 'one account for one identity, whichever variant')
})

t.test('with REQUIRE_EMAIL_VERIFICATION, a linked account whose address is unverified (changed since) does not sign in until it is verified again', async (t) => {
  const service = await serviceWithProvider(t, 'header', { REQUIRE_EMAIL_VERIFICATION: 'true' })
  const first = await signIn(service, 'unsure')
  t.ok(fragmentOf(first.callback).has('code'), 'a verified provider email signs in')
  const user = await service.server.store.findUserByEmail('unsure@example.test')
  await service.server.store.updateUser(user?.id ?? 0, { email: 'changed@example.test', emailVerified: false, emailVerifiedAt: null })
  const { callback } = await signIn(service, 'unsure')
  t.equal(callback.headers.get('location'), '/account#error=email_not_verified')
  await markEmailVerified(service.server.store, user?.id ?? 0)
  const again = await signIn(service, 'unsure')
  t.ok(fragmentOf(again.callback).has('code'), 'once verified, it signs in')
})

t.test('a code the provider does not honour comes back as #error=invalid_response, and signs nobody in', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const jar = new CookieJar()
  const { callbackUrl } = await throughProvider(`${service.baseUrl}/auth/oidc/test?redirect_to=/app`, jar, { login: 'tampered' })
  const tampered = new URL(callbackUrl ?? '')
  tampered.searchParams.set('code', 'not-the-code')
  const callback = await fetch(tampered, { redirect: 'manual', headers: { cookie: jar.header() } })
  t.equal(callback.status, 303)
  t.equal(callback.headers.get('location'), '/app#error=invalid_response')
  t.notOk(callback.headers.getSetCookie().some(line => /^(accessToken|refreshToken)=/.test(line)), 'no session cookie')
  t.equal(await service.server.store.findUserByEmail('tampered@example.test'), undefined)
})

t.test('with TOTP on, the provider is the first factor only: the exchange answers 403 MFA_REQUIRED, the cookie callback sends back an mfa_token', async (t) => {
  for (const variant of ['header', 'cookie'] as const) {
    const service = await serviceWithProvider(t, variant)
    let session
    if (variant === 'header') {
      session = (await exchange(service, fragmentOf((await signIn(service, `totp-${variant}`)).callback).get('code') ?? '')).json()
    } else {
      const { jar } = await signIn(service, `totp-${variant}`)
      const cookies = Object.fromEntries(jar.header().split('; ').map(pair => pair.split('=') as [string, string]))
      session = { user: { id: 0 }, accessToken: cookies.accessToken, refreshToken: cookies.refreshToken }
    }
    t.ok(session.accessToken, `${variant}: the first sign-in has a session`)
    const { secret } = await enableTotp(service.server, variant, session)

    const { callback } = await signIn(service, `totp-${variant}`)
    t.notOk(callback.headers.getSetCookie().some(line => /^(accessToken|refreshToken)=/.test(line)), `${variant}: no session cookie before the code`)
    let mfaToken: string
    if (variant === 'header') {
      const refused = await exchange(service, fragmentOf(callback).get('code') ?? '')
      t.equal(refused.statusCode, 403)
      t.equal(refused.json().code, 'MFA_REQUIRED')
      t.notOk(refused.json().accessToken, 'no token with it')
      mfaToken = refused.json().mfa_token
    } else {
      t.equal(callback.status, 303)
      mfaToken = fragmentOf(callback).get('mfa_token') ?? ''
    }
    // The provider's name rides in front (the first factor, recorded with the login): test/security/provider-factors.test.ts.
    t.match(mfaToken, /^test\.[A-Za-z0-9_-]{20,}$/, `${variant}: an mfa_token`)
    // The confirming code's time step is used: the next step's code is within the one step of drift.
    const verified = await service.server.inject({ method: 'POST', url: '/auth/mfa/verify', payload: { mfa_token: mfaToken, code: codeAt(secret, 1) } })
    t.equal(verified.statusCode, 200, `${variant}: the code completes the sign-in`)
    t.ok(verified.json().accessToken)
  }
})

import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../src/app.js'
import type { Variant } from '../../core/config.js'
import { redirectTarget } from '../../core/oidc/redirect-target.js'
import { stateCookie } from '../../core/oidc/state-cookie.js'
import { CHEAP_HASH_PARAMETERS, testConfig } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { startMailbox, type Mailbox } from '../fixtures/mailbox.js'
import { CookieJar, freePort, pkcePair, providerSettings, startOpenIdProvider, throughProvider, type TestProvider } from '../fixtures/openid-provider.js'

/*
 * Findings 7, 8 and 9 of the second review, against a real OpenID provider (oidc-provider):
 * 7. the provider's email claim was taken as it came: `Win <mallory@evil.test>, victim@…` became
 *    an account's email, and its mail went to both addresses;
 * 8. the header variant's #code= was worth a session to whoever held it, not only to the app that
 *    started the sign-in (login CSRF): the start now takes a PKCE code_challenge, the exchange its verifier;
 * 9. a redirect_to beyond Latin-1 made the callback answer 500 with Node's text, after the sign-in.
 */

interface Service {
  server: FastifyInstance
  baseUrl: string
  provider: TestProvider
  mailbox: Mailbox
  /** The service's log lines, parsed. */
  logs: Array<Record<string, any>>
}

async function serviceWithProvider (t: Test, variant: Variant): Promise<Service> {
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const provider = await startOpenIdProvider(t, [`${baseUrl}/auth/oidc/test/callback`])
  const mailbox = await startMailbox(t)
  const logs: Array<Record<string, any>> = []
  const stream = new Writable({ write (chunk, _encoding, done) { logs.push(JSON.parse(chunk.toString())); done() } })
  const config = testConfig({
    API_VARIANT: variant,
    DATABASE_URL: await testDatabaseUrl(t),
    LOG_LEVEL: 'info',
    PUBLIC_URL: baseUrl,
    COOKIE_SECURE: 'false',
    SMTP_URL: mailbox.smtpUrl,
    OIDC_PROVIDERS: 'test',
    ...providerSettings('test', provider)
  })
  const options = serverOptions(config)
  const server = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  t.teardown(() => server.close())
  await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  await server.listen({ port, host: 'localhost' })
  return { server, baseUrl, provider, mailbox, logs }
}

const pkce = pkcePair

/** Start (with `query`), provider login as `login`, and the service's answer at the callback. */
async function signIn (service: Service, login: string, query: string): Promise<Response> {
  const jar = new CookieJar()
  const { start, callbackUrl } = await throughProvider(`${service.baseUrl}/auth/oidc/test${query}`, jar, { login })
  if (callbackUrl === undefined) throw new Error(`the sign-in did not reach the provider: ${start.status} ${await start.text()}`)
  return await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header() } })
}

const fragmentOf = (response: Response) => new URLSearchParams(new URL(response.headers.get('location') ?? '', 'http://x').hash.slice(1))

async function exchange (service: Service, payload: Record<string, string>) {
  return await service.server.inject({ method: 'POST', url: '/auth/oidc/exchange', payload })
}

t.test('finding 7: a provider email that is not one address is refused with #error=invalid_email, and nobody gets mail', async (t) => {
  for (const variant of ['header', 'cookie'] as const) {
    const service = await serviceWithProvider(t, variant)
    const crafted = 'Win <mallory@evil.test>, victim@example.test'
    service.provider.accounts.set('mallory', { email: crafted, email_verified: false, given_name: 'Mallory' })
    service.provider.accounts.set('spaces', { email: 'victim@example.test mallory@evil.test', email_verified: true })
    const { challenge } = pkce()
    const query = variant === 'header' ? `?redirect_to=/app&code_challenge=${challenge}` : '?redirect_to=/app'

    for (const login of ['mallory', 'spaces']) {
      const callback = await signIn(service, login, query)
      t.equal(callback.status, 303, `${variant}, ${login}: back to the app`)
      t.equal(callback.headers.get('location'), '/app#error=invalid_email', `${variant}, ${login}: with the reason the page shows`)
      t.notOk(callback.headers.getSetCookie().some(line => /^(accessToken|refreshToken)=/.test(line)), 'no session')
    }
    t.same(await service.server.store.listUsers({ limit: 10 }), [], `${variant}: no account was made`)

    // Control: a well-formed address, with the case and spaces a provider may send, signs up as usual.
    service.provider.accounts.set('victim', { email: '  Victim@Example.test ', email_verified: true })
    const control = await signIn(service, 'victim', query)
    t.equal(fragmentOf(control).get('error'), null, `${variant}: a real address signs in`)
    t.ok(await service.server.store.findUserByEmail('victim@example.test'), 'its account holds the address, trimmed and lower-cased')
    // A mail to the control's address comes (the outbox sends in order): no mail before it went to the crafted address.
    await service.server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: 'victim@example.test' } })
    const mail = await service.mailbox.next('victim@example.test')
    t.ok(mail, 'the control\'s reset mail arrived')
    t.notOk(service.mailbox.received.some(received => JSON.stringify(received.to).includes('evil.test')), 'the attacker\'s address got no mail')
  }
})

t.test('finding 7: the console explains #error=invalid_email', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const script = await fetch(`${service.baseUrl}/assets/account-providers.js`)
  t.equal(script.status, 200)
  t.match(await script.text(), /\binvalid_email:/)
})

t.test('finding 8: the header variant\'s start needs a code_challenge (S256)', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  for (const query of ['?redirect_to=/app', '?redirect_to=/app&code_challenge=too-short', `?redirect_to=/app&code_challenge=${pkce().challenge}&code_challenge_method=plain`]) {
    const start = await service.server.inject({ method: 'GET', url: `/auth/oidc/test${query}` })
    t.equal(start.statusCode, 400, query)
    t.equal(start.json().code, 'VALIDATION_FAILED', query)
    t.notOk(start.headers['set-cookie'], 'no sign-in is started')
  }
  const { challenge } = pkce()
  const start = await service.server.inject({ method: 'GET', url: `/auth/oidc/test?redirect_to=/app&code_challenge=${challenge}&code_challenge_method=S256` })
  t.equal(start.statusCode, 302, 'with one, the sign-in starts')
})

t.test('finding 8: a #code= is worth nothing without the verifier of the app that started the sign-in, and a wrong try spends it', async (t) => {
  const service = await serviceWithProvider(t, 'header')
  // Login CSRF: the attacker starts a sign-in to their own account and plants the #code= in the victim's app.
  const attacker = pkce()
  const planted = fragmentOf(await signIn(service, 'attacker', `?redirect_to=/app&code_challenge=${attacker.challenge}`)).get('code') ?? ''
  t.match(planted, /^test\./, 'the attacker has a code')
  const victimApp = pkce()
  const refused = await exchange(service, { code: planted, code_verifier: victimApp.verifier })
  t.equal(refused.statusCode, 400, 'the victim\'s app, with its own verifier, gets no session of the attacker\'s account')
  t.equal(refused.json().code, 'INVALID_CODE')
  const afterward = await exchange(service, { code: planted, code_verifier: attacker.verifier })
  t.equal(afterward.json().code, 'INVALID_CODE', 'the code is spent by the wrong try')

  // No verifier at all: refused, and spent.
  const app = pkce()
  const code = fragmentOf(await signIn(service, 'ada', `?redirect_to=/app&code_challenge=${app.challenge}`)).get('code') ?? ''
  const bare = await exchange(service, { code })
  t.equal(bare.statusCode, 400)
  t.equal(bare.json().code, 'INVALID_CODE', 'a code without its verifier is refused')
  t.equal((await exchange(service, { code, code_verifier: app.verifier })).json().code, 'INVALID_CODE', 'and spent')

  // The app that started the sign-in, with its verifier: signed in, once.
  const next = pkce()
  const good = fragmentOf(await signIn(service, 'ada', `?redirect_to=/app&code_challenge=${next.challenge}`)).get('code') ?? ''
  const signedIn = await exchange(service, { code: good, code_verifier: next.verifier })
  t.equal(signedIn.statusCode, 200)
  t.match(signedIn.json(), { user: { email: 'ada@example.test' }, accessToken: String, refreshToken: String })
  t.equal((await exchange(service, { code: good, code_verifier: next.verifier })).json().code, 'INVALID_CODE', 'once')
})

t.test('finding 9: a redirect_to beyond Latin-1 is sent back percent-encoded, in both variants', async (t) => {
  const target = '/app/ŝtono?city=東京&a=b c'
  const encoded = '/app/%C5%9Dtono?city=%E6%9D%B1%E4%BA%AC&a=b%20c'
  const header = await serviceWithProvider(t, 'header')
  const app = pkce()
  const callback = await signIn(header, 'ada', `?redirect_to=${encodeURIComponent(target)}&code_challenge=${app.challenge}`)
  t.equal(callback.status, 303)
  t.match(callback.headers.get('location'), new RegExp(`^${encoded.replace(/[?]/g, '\\?')}#code=test\\.`), 'the header variant\'s Location, percent-encoded')
  t.equal((await exchange(header, { code: fragmentOf(callback).get('code') ?? '', code_verifier: app.verifier })).statusCode, 200)

  const cookie = await serviceWithProvider(t, 'cookie')
  const landing = await signIn(cookie, 'ada', `?redirect_to=${encodeURIComponent(target)}`)
  t.equal(landing.status, 200)
  t.match(await landing.text(), `content="0;url=${encoded.replace(/&/g, '&#38;')}"`, 'the cookie variant\'s page moves on to it, percent-encoded')

  // No URL decodes to a lone surrogate (it has no UTF-8 form), but the check must not throw on one.
  t.equal(redirectTarget('/app\uD800', []), undefined, 'a target that is not text is refused')
  t.equal(redirectTarget('/app/%C5%9D', []), '/app/%C5%9D', 'a target already encoded is not encoded twice')
  t.equal(redirectTarget('/.//evil.example/\u0101', []), '/.//evil.example/%C4%81', 'the path is not normalised into a host')
})

t.test('finding 9: a callback that fails answers in the error shape, without Node\'s text, and logs the failure as an error', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  // A target that cannot be a Location header, sealed past redirect_to's check (as the old check let through).
  const { authorizationUrl, cookie } = await service.server.oidc.begin('test', `${service.baseUrl}/auth/oidc/test/callback`, '/app/\u0101')
  const state = authorizationUrl.searchParams.get('state') ?? ''
  const callback = await fetch(`${service.baseUrl}/auth/oidc/test/callback?state=${state}&error=access_denied`, {
    redirect: 'manual',
    headers: { cookie: `${stateCookie('', 'test', false).name}=${cookie}` } // COOKIE_SECURE=false: the plain name
  })
  t.equal(callback.status, 500)
  t.equal(callback.headers.get('location'), null, 'no Location')
  t.match(callback.headers.get('content-type'), /^application\/json/)
  t.same(await callback.json(), { statusCode: 500, code: 'INTERNAL_ERROR', error: 'Internal Server Error', message: 'Something went wrong on our side' })
  const failure = service.logs.find(line => line.level >= 50 && line.msg === 'request failed')
  t.ok(failure, 'logged at error level')
  t.match(failure?.err?.message, /Invalid character/, 'with the cause')
})

import { existsSync } from 'node:fs'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import type { Browser, CDPSession, Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { PAGE_CSP_DIRECTIVES, pageCsp } from '../../plugins/external/helmet.js'
import app, { serverOptions } from '../../src/app.js'
import type { Variant } from '../../core/config.js'
import { testConfig, CHEAP_HASH_PARAMETERS } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { freePort } from '../fixtures/http.js'

/*
 * Passkeys in Chromium, with a CDP virtual authenticator standing in for the platform's
 * (Touch ID, Windows Hello): WebAuthn runs for real in the browser, on a page of the service's
 * origin. An RP ID cannot be an IP address, so the service is reached as http://localhost:<port>
 * with PUBLIC_URL set to that. The page is a test-only route added beside the service.
 */

const CHROMIUM = '/usr/bin/chromium'
const PAGE = '/passkey-test-page'

interface Answer { status: number, body: any }

/** The service in this process, on localhost, with the test page at PAGE. */
async function startService (t: Test, variant: Variant): Promise<string> {
  const port = await freePort()
  const publicUrl = `http://localhost:${port}`
  const config = testConfig({ API_VARIANT: variant, PUBLIC_URL: publicUrl, COOKIE_SECURE: 'false', DATABASE_URL: await testDatabaseUrl(t) })
  const server = Fastify(serverOptions(config))
  // Cheap hashes, as build(t) hashes: the passkey ceremonies do not depend on the password hash's cost.
  await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  // The CSP of the service's own pages: scripts and API calls from this origin only.
  server.get(PAGE, { schema: { hide: true }, onRequest: pageCsp(PAGE_CSP_DIRECTIVES) }, async (_request, reply) => {
    return reply.type('text/html; charset=utf-8').send('<!doctype html><html lang="en"><title>passkeys</title><body></body></html>')
  })
  await server.listen({ host: '127.0.0.1', port })
  t.teardown(() => server.close())
  return publicUrl
}

/** A JSON call from the page (same origin: the cookie variant's cookies go along). */
async function api (page: Page, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return await page.evaluate(async ([method, path, body, headers]) => {
    const response = await fetch(path, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await response.text()
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) }
  }, [method, path, body, headers] as const)
}

/** navigator.credentials.create() with the service's options, answering credential.toJSON(). */
async function createPasskey (page: Page, options: unknown): Promise<unknown> {
  return await page.evaluate(async (options) => {
    const publicKey = (PublicKeyCredential as any).parseCreationOptionsFromJSON(options)
    const credential = await navigator.credentials.create({ publicKey }) as any
    return credential.toJSON()
  }, options)
}

/** navigator.credentials.get() with the service's options: credential.toJSON(), or the DOMException's name. */
async function getPasskey (page: Page, options: unknown): Promise<{ credential?: unknown, error?: string }> {
  return await page.evaluate(async (options) => {
    try {
      const publicKey = (PublicKeyCredential as any).parseRequestOptionsFromJSON(options)
      // An authenticator with nothing to offer may leave the request pending until its timeout: 10 s is enough.
      const credential = await navigator.credentials.get({ publicKey, signal: AbortSignal.timeout(10_000) }) as any
      return { credential: credential.toJSON() }
    } catch (error) {
      return { error: (error as Error).name }
    }
  }, options)
}

async function addAuthenticator (cdp: CDPSession): Promise<string> {
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
  })
  return authenticatorId
}

async function passkeyLogin (page: Page): Promise<Answer & { error?: string }> {
  const options = await api(page, 'POST', '/auth/passkeys/authentication-options')
  const { credential, error } = await getPasskey(page, options.body)
  if (credential === undefined) return { status: 0, body: undefined, error }
  return await api(page, 'POST', '/auth/passkeys/login', credential)
}

async function scenario (t: Test, browser: Browser, variant: Variant): Promise<void> {
  const baseUrl = await startService(t, variant)
  const context = await browser.newContext()
  t.teardown(() => context.close())
  const page = await context.newPage()
  const pageErrors: string[] = []
  page.on('pageerror', error => pageErrors.push(error.message))
  await page.goto(`${baseUrl}${PAGE}`)
  t.equal(await page.evaluate(() => window.isSecureContext), true, 'localhost is a secure context: WebAuthn is available')
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable', { enableUI: false })
  const authenticatorId = await addAuthenticator(cdp)

  // Variant A keeps its tokens in script; variant B in HttpOnly cookies the page never sees.
  let auth: Record<string, string> = {}
  const remember = (answer: Answer) => {
    if (variant === 'header') auth = { authorization: `Bearer ${answer.body.accessToken}`, 'x-refresh-token': `Bearer ${answer.body.refreshToken}` }
  }
  const account = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', password: 'analytical engine 1843', ...(variant === 'cookie' ? { username: 'ada' } : {}) }
  const registered = await api(page, 'POST', '/auth/register', account)
  t.equal(registered.status, 201)
  const userId = registered.body.id
  const passwordLogin = await api(page, 'POST', '/auth/login', { email: account.email, password: account.password })
  t.equal(passwordLogin.status, 200)
  remember(passwordLogin)

  const options = await api(page, 'POST', '/auth/passkeys/registration-options', undefined, auth)
  t.equal(options.status, 200)
  t.equal(options.body.rp.id, 'localhost')
  const added = await api(page, 'POST', '/auth/passkeys', { ...(await createPasskey(page, options.body) as object), name: 'Virtual authenticator' }, auth)
  t.equal(added.status, 201, JSON.stringify(added.body))
  t.equal(added.body.name, 'Virtual authenticator')
  const [stored] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials
  t.equal(stored.isResidentCredential, true, 'a discoverable credential')
  t.equal(stored.rpId, 'localhost')

  const logout = await api(page, 'POST', '/auth/logout', undefined, variant === 'header' ? { 'x-refresh-token': auth['x-refresh-token'] } : {})
  t.equal(logout.status, 204)
  t.equal((await api(page, 'GET', `/users/${userId}`, undefined, auth)).status, 401, 'logged out')

  const login = await passkeyLogin(page)
  t.equal(login.status, 200, `the passkey alone logs in: ${JSON.stringify(login.body)}`)
  t.same(Object.keys(login.body).sort(), variant === 'header' ? ['accessToken', 'refreshToken', 'user'] : ['accessToken', 'user'])
  remember(login)
  const user = await api(page, 'GET', `/users/${userId}`, undefined, auth)
  t.equal(user.status, 200)
  t.equal(user.body.email, 'ada@example.com', 'and reads the user')
  const listed = await api(page, 'GET', '/auth/passkeys', undefined, auth)
  t.equal(listed.body.passkeys.length, 1)
  t.type(listed.body.passkeys[0].last_used_at, 'string')

  // The counter: raise the authenticator's to 10 and log in; then a copy of the key at 2 (a clone) is refused.
  const [credential] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials
  const setSignCount = async (signCount: number) => {
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId })
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credential, signCount } })
  }
  await setSignCount(10)
  t.equal((await passkeyLogin(page)).status, 200, 'a counter that grew logs in')
  await setSignCount(2)
  const regressed = await passkeyLogin(page)
  t.equal(regressed.status, 401)
  t.equal(regressed.body.code, 'PASSKEY_COUNTER_REGRESSED', 'a counter that went back is refused')
  const events = await api(page, 'GET', '/auth/security-events', undefined, auth)
  t.ok(events.body.events.some((event: { type: string }) => event.type === 'passkey_counter_regressed'), 'and recorded')

  // Another authenticator: empty, then holding a credential the service never registered.
  await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId })
  const otherId = await addAuthenticator(cdp)
  const empty = await passkeyLogin(page)
  t.equal(empty.status, 0, 'an authenticator without the credential gives the browser nothing to send')
  t.match(empty.error, /^(NotAllowedError|TimeoutError|AbortError)$/)
  const unregistered = await api(page, 'POST', '/auth/passkeys/registration-options', undefined, auth)
  await createPasskey(page, unregistered.body)
  t.equal((await cdp.send('WebAuthn.getCredentials', { authenticatorId: otherId })).credentials.length, 1)
  const unknown = await passkeyLogin(page)
  t.equal(unknown.status, 401)
  t.equal(unknown.body.code, 'INVALID_PASSKEY', 'a credential the service does not know is refused')
  t.same(pageErrors, [], 'no script errors')
}

t.test('passkeys in Chromium with a virtual authenticator: register, log out, log in with the passkey alone', {
  skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM}: install Debian's chromium (apt-get install chromium) to run the browser test`
}, async (t) => {
  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  for (const variant of ['header', 'cookie'] as const) {
    await t.test(`${variant} variant`, async (t) => { await scenario(t, browser, variant) })
  }
})

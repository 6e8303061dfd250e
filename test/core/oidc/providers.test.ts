import { createServer } from 'node:http'
import t, { type Test } from 'tap'
import type { AccountStore } from '../../../db/store.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { STATE_TTL_SECONDS } from '../../../core/oidc/state-cookie.js'
import { createOidc, type OidcOptions } from '../../../core/oidc/providers.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { CookieJar, freePort, startOpenIdProvider, throughProvider, type TestProvider } from '../../fixtures/openid-provider.js'

/** A stand-in for the service's sign-in start and callback: GET /start sends the browser to `authorizationUrl`. */
async function startPage (t: Test, port: number) {
  const page = { authorizationUrl: '' }
  const server = createServer((_request, response) => {
    response.writeHead(302, { location: page.authorizationUrl }).end()
  })
  await new Promise<void>(resolve => server.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  return page
}

function settingsOf (provider: TestProvider, name = 'test'): OidcOptions['providers'][number] {
  return { name, label: 'Test Provider', issuer: provider.issuer, clientId: provider.clientId, clientSecret: provider.clientSecret, scopes: 'openid email profile' }
}

async function oidcWith (t: Test, providers: OidcOptions['providers'], deps: { store?: AccountStore, clock?: TestClock, log?: Logger } = {}) {
  const store = deps.store ?? await testStore(t)
  const clock = deps.clock ?? testClock()
  const oidc = await createOidc({ store, clock, log: deps.log ?? silentLogger }, { providers, discoveryTimeoutSeconds: 2 })
  return { oidc, store, clock }
}

t.test('with no provider configured, every provider is unknown', async (t) => {
  const { oidc } = await oidcWith(t, [])
  t.same(oidc.providers(), [])
  t.throws(() => oidc.assertServed('test'), { code: 'PROVIDER_NOT_FOUND' })
  await t.rejects(oidc.begin('test', 'http://localhost/callback', '/'), { code: 'PROVIDER_NOT_FOUND' })
})

t.test('a provider whose discovery fails is logged and left out; the others serve', async (t) => {
  const provider = await startOpenIdProvider(t, ['http://127.0.0.1:1/callback'])
  const errors: unknown[] = []
  const log: Logger = { ...silentLogger, error: (object: object | string) => { errors.push(object) } }
  const down = { ...settingsOf(provider, 'down'), issuer: `http://127.0.0.1:${await freePort()}` }
  const { oidc } = await oidcWith(t, [settingsOf(provider), down], { log })
  t.same(oidc.providers(), [{ name: 'test', label: 'Test Provider' }])
  t.throws(() => oidc.assertServed('down'), { code: 'PROVIDER_NOT_FOUND' })
  t.doesNotThrow(() => oidc.assertServed('test'))
  t.match(errors, [{ provider: 'down' }], 'the failed discovery is logged')
})

t.test('a sign-in goes through the provider and yields its claims, the email lower-cased and verified', async (t) => {
  const port = await freePort()
  const redirectUri = `http://127.0.0.1:${port}/callback`
  const provider = await startOpenIdProvider(t, [redirectUri])
  provider.accounts.set('grace', { email: 'Grace@Example.test', email_verified: true, given_name: 'Grace', family_name: 'Hopper', preferred_username: 'grace' })
  const page = await startPage(t, port)
  const { oidc } = await oidcWith(t, [settingsOf(provider)])

  const { authorizationUrl, cookie } = await oidc.begin('test', redirectUri, '/app')
  t.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256')
  page.authorizationUrl = authorizationUrl.href
  const { callbackUrl } = await throughProvider(`http://127.0.0.1:${port}/start`, new CookieJar(), { login: 'grace' })
  const callback = new URL(callbackUrl ?? '')
  const pending = oidc.pending('test', cookie, callback.searchParams.get('state') ?? undefined)
  t.equal(pending.redirectTo, '/app')
  const claims = await oidc.complete('test', callback, pending)
  t.same(claims, { subject: 'grace', email: 'grace@example.test', emailVerified: true, givenName: 'Grace', familyName: 'Hopper', name: undefined, preferredUsername: 'grace' })
})

t.test('the state cookie opens only with its state, at its provider, and within STATE_TTL', async (t) => {
  const provider = await startOpenIdProvider(t, ['http://127.0.0.1:1/callback'])
  const { oidc, clock } = await oidcWith(t, [settingsOf(provider), settingsOf(provider, 'other')])
  const { authorizationUrl, cookie } = await oidc.begin('test', 'http://127.0.0.1:1/callback', '/')
  const state = authorizationUrl.searchParams.get('state') ?? ''
  t.equal(oidc.pending('test', cookie, state).state, state)
  t.throws(() => oidc.pending('test', cookie, 'another state'), { code: 'INVALID_STATE' })
  t.throws(() => oidc.pending('test', cookie, undefined), { code: 'INVALID_STATE' })
  t.throws(() => oidc.pending('other', cookie, state), { code: 'INVALID_STATE' }, 'not at another provider\'s callback')
  t.throws(() => oidc.pending('test', undefined, state), { code: 'INVALID_STATE' })
  clock.advance(STATE_TTL_SECONDS * 1000)
  t.throws(() => oidc.pending('test', cookie, state), { code: 'INVALID_STATE' }, 'expired')
})

t.test('instances on one store open each other\'s state cookies (any may take the callback)', async (t) => {
  const provider = await startOpenIdProvider(t, ['http://127.0.0.1:1/callback'])
  const store = await testStore(t)
  const clock = testClock()
  const { oidc: first } = await oidcWith(t, [settingsOf(provider)], { store, clock })
  const { oidc: second } = await oidcWith(t, [settingsOf(provider)], { store, clock })
  const { authorizationUrl, cookie } = await first.begin('test', 'http://127.0.0.1:1/callback', '/')
  const state = authorizationUrl.searchParams.get('state') ?? ''
  t.equal(second.pending('test', cookie, state).state, state)
})

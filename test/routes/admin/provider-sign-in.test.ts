import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../../src/app.js'
import type { Variant } from '../../../core/config.js'
import { CHEAP_HASH_PARAMETERS, testConfig } from '../../fixtures/build.js'
import { testDatabaseUrl } from '../../fixtures/database.js'
import { CookieJar, freePort, pkcePair, providerSettings, startOpenIdProvider, throughProvider } from '../../fixtures/openid-provider.js'

// A disabled account does not sign in with an OpenID provider either: the callback sends the browser
// back with #error=account_disabled, and a header-variant code issued before the disabling is refused.

async function serviceWithProvider (t: Test, variant: Variant) {
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const provider = await startOpenIdProvider(t, [`${baseUrl}/auth/oidc/test/callback`])
  const config = testConfig({
    API_VARIANT: variant, DATABASE_URL: await testDatabaseUrl(t), PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', OIDC_PROVIDERS: 'test', ...providerSettings('test', provider)
  })
  const server = Fastify(serverOptions(config))
  t.teardown(() => server.close())
  await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  await server.listen({ port, host: 'localhost' })
  provider.accounts.set('grace', { email: 'grace@example.test', email_verified: true, given_name: 'Grace' })
  return { server, baseUrl }
}

async function signIn (baseUrl: string, query: string): Promise<Response> {
  const jar = new CookieJar()
  const { start, callbackUrl } = await throughProvider(`${baseUrl}/auth/oidc/test${query}`, jar, { login: 'grace' })
  if (callbackUrl === undefined) throw new Error(`the sign-in did not reach the provider: ${start.status}`)
  return await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header() } })
}

const fragmentOf = (response: Response) => new URLSearchParams(new URL(response.headers.get('location') ?? '', 'http://x').hash.slice(1))

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: a disabled account's provider sign-in is refused`, async (t) => {
    const { server, baseUrl } = await serviceWithProvider(t, variant)
    const { challenge, verifier } = pkcePair()
    const query = variant === 'header' ? `?redirect_to=/app&code_challenge=${challenge}` : '?redirect_to=/app'
    const first = await signIn(baseUrl, query)
    t.equal(fragmentOf(first).get('error'), null, 'an enabled account signs in')
    const user = await server.store.findUserByEmail('grace@example.test')
    if (user === undefined) throw new Error('no account was made')

    await server.store.disableUser(user.id, new Date())
    const refused = await signIn(baseUrl, query)
    t.equal(refused.headers.get('location'), '/app#error=account_disabled')
    t.notOk(refused.headers.getSetCookie().some(line => /^(accessToken|refreshToken)=/.test(line)), 'no session')

    if (variant === 'header') {
      // A code handed out before the account was disabled is worth nothing after.
      await server.store.enableUser(user.id, new Date())
      const code = fragmentOf(await signIn(baseUrl, query)).get('code')
      t.ok(code)
      await server.store.disableUser(user.id, new Date())
      const exchange = await server.inject({ method: 'POST', url: '/auth/oidc/exchange', payload: { code, code_verifier: verifier } })
      t.equal(exchange.statusCode, 403)
      t.equal(exchange.json().code, 'ACCOUNT_DISABLED')
    }
  })
}

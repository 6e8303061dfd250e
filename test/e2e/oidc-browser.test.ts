import { createHash, randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import type { Variant } from '../../core/config.js'
import { sharedChromium, skipWithoutChromium as skip } from '../fixtures/browser.js'
import { build } from '../fixtures/build.js'
import { freePort, providerSettings, startOpenIdProvider, type TestProvider } from '../fixtures/openid-provider.js'

/** The service at http://localhost:<port> and the provider at http://127.0.0.1:<port>: two sites, as in production. */
async function sites (t: Test, variant: Variant): Promise<{ baseUrl: string, provider: TestProvider }> {
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const provider = await startOpenIdProvider(t, [`${baseUrl}/auth/oidc/corp/callback`])
  const server = await build(t, {
    variant,
    env: { PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', OIDC_PROVIDERS: 'corp', ...providerSettings('corp', provider, 'Corp') }
  })
  await server.listen({ port, host: 'localhost' })
  return { baseUrl, provider }
}

/** A fresh context (cookies of its own) in the file's one Chromium, closed at the end of the test `test`. */
async function freshContext (test: Test) {
  const context = await (await sharedChromium(t)).newContext()
  test.teardown(() => context.close())
  return context
}

t.test('in Chromium, signing in with a provider on another site creates the account and arrives signed in (cookie variant)', { skip }, async (t) => {
  const { baseUrl, provider } = await sites(t, 'cookie')
  provider.accounts.set('hedy', { email: 'hedy@example.test', email_verified: true, given_name: 'Hedy', family_name: 'Lamarr' })
  const context = await freshContext(t)
  const page = await context.newPage()

  // redirect_to a guarded route: it answers 200 only if the SameSite=Strict cookies come with the arrival.
  await page.goto(`${baseUrl}/auth/oidc/corp?redirect_to=/auth/identities`)
  t.equal(new URL(page.url()).origin, provider.issuer, 'at the provider\'s login screen')
  await page.fill('input[name=login]', 'hedy')
  await page.fill('input[name=password]', 'any password')
  await Promise.all([page.waitForURL(`${baseUrl}/auth/identities`), page.click('button[type=submit]')])
  const arrived = JSON.parse(await page.locator('body').innerText())
  t.match(arrived, { identities: [{ provider: 'corp', email: 'hedy@example.test' }] }, 'arrived signed in: the Strict cookies were sent')

  const cookies = await context.cookies(baseUrl)
  t.ok(cookies.find(cookie => cookie.name === 'accessToken')?.httpOnly, 'session in HttpOnly cookies')
  t.equal(cookies.find(cookie => cookie.name === 'accessToken')?.sameSite, 'Strict')
  t.notOk(cookies.some(cookie => /^(__Host-)?oidc_state/.test(cookie.name)), 'the state cookie is spent (on Path=/, so context.cookies sees it)')
  // (Page script cannot fetch from an API answer: its Content-Security-Policy is default-src 'none'.)
  await page.goto(`${baseUrl}/auth/account`)
  t.match(JSON.parse(await page.locator('body').innerText()), { email: 'hedy@example.test', first_name: 'Hedy', last_name: 'Lamarr', username: 'hedy' })
})

t.test('in Chromium, the header variant hands the page a one-time #code= that is exchanged once', { skip }, async (t) => {
  const { baseUrl, provider } = await sites(t, 'header')
  provider.accounts.set('ada', { email: 'ada@example.test', email_verified: true, given_name: 'Ada', family_name: 'Lovelace' })
  const context = await freshContext(t)
  const page = await context.newPage()

  // The page's app keeps a PKCE verifier and starts the sign-in with its challenge.
  const verifier = randomBytes(32).toString('base64url')
  const challenge = createHash('sha256').update(verifier).digest('base64url')
  await page.goto(`${baseUrl}/auth/oidc/corp?redirect_to=/health&code_challenge=${challenge}`)
  await page.fill('input[name=login]', 'ada')
  await page.fill('input[name=password]', 'any password')
  await Promise.all([page.waitForURL(/\/health#code=/), page.click('button[type=submit]')])
  const code = new URLSearchParams(new URL(page.url()).hash.slice(1)).get('code')
  // The exchange as the page's app would make it (from the browser's context, its cookies and all).
  const exchange = async () => {
    const response = await context.request.post(`${baseUrl}/auth/oidc/exchange`, { data: { code, code_verifier: verifier } })
    return { status: response.status(), body: await response.json() }
  }
  const results = [await exchange(), await exchange()]
  t.equal(results[0].status, 200)
  t.match(results[0].body, { user: { email: 'ada@example.test' }, accessToken: String, refreshToken: String })
  t.equal(results[1].status, 400)
  t.equal(results[1].body.code, 'INVALID_CODE', 'the code works once')
})

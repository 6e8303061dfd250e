import type { Page } from 'playwright-core'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { focusedId, launchChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import type { Session } from '../fixtures/factories.js'
import { call } from '../fixtures/http.js'
import { awayFromStepEdge, codeAt, enableTotp } from '../fixtures/mfa.js'
import { freePort, providerSettings, startOpenIdProvider, type TestProvider } from '../fixtures/openid-provider.js'

/*
 * The console's "Sign in with <label>" in Chromium: a real OpenID Provider (oidc-provider's development
 * login screens) on http://127.0.0.1:<port>, the service on http://localhost:<port> (two sites, as in
 * production), the whole round trip clicked through from the console; and the landings the callback can
 * make (#error=, #mfa_token=). No CSP refusal or script error throughout.
 */

/** From the console, "Sign in with Test Provider" and the provider's login screen, back at the console. */
async function signInAtProvider (page: Page, baseUrl: string, issuer: string, login: string) {
  await page.goto(`${baseUrl}/account`)
  await Promise.all([page.waitForURL(url => url.origin === issuer), page.getByRole('link', { name: 'Sign in with Test Provider' }).click()])
  await page.fill('input[name=login]', login)
  await page.fill('input[name=password]', 'any password')
  await Promise.all([page.waitForURL(url => url.href.startsWith(`${baseUrl}/account`)), page.click('button[type=submit]')])
}

t.test('the console\'s sign-in with a provider in Chromium', {
  skip: skipWithoutChromium
}, async (t) => {
  const browser = await launchChromium(t)
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const provider: TestProvider = await startOpenIdProvider(t, [`${baseUrl}/auth/oidc/test/callback`])
  const server = await build(t, {
    variant: 'cookie',
    env: { PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', OIDC_PROVIDERS: 'test', ...providerSettings('test', provider, 'Test Provider') }
  })
  await server.listen({ port, host: 'localhost' })

  t.test('"Sign in with Test Provider" goes to the provider and comes back signed in, the identity listed', async (t) => {
    provider.accounts.set('grace', { email: 'grace@example.test', email_verified: true, given_name: 'Grace', family_name: 'Hopper' })
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(`${baseUrl}/account`)
    const signIn = page.getByRole('link', { name: 'Sign in with Test Provider' })
    await signIn.waitFor()
    t.equal(await signIn.getAttribute('href'), '/auth/oidc/test?redirect_to=%2Faccount', 'back to the console afterwards')
    t.same(await violations(), [], 'no CSP refusal on the signed-out console')

    await Promise.all([page.waitForURL(url => url.origin === provider.issuer), signIn.click()])
    await page.fill('input[name=login]', 'grace')
    await page.fill('input[name=password]', 'any password')
    await Promise.all([page.waitForURL(`${baseUrl}/account`), page.click('button[type=submit]')])

    await page.locator('#signed-in-title').filter({ hasText: 'grace@example.test' }).waitFor()
    const identity = page.locator('#identities li[data-provider=test]')
    await identity.waitFor()
    t.match(await identity.innerText(), /Test Provider[\s\S]*grace@example\.test · linked /, 'label, email and linked date')
    t.ok(await identity.locator('time').getAttribute('datetime'), 'the linked date as a <time>')
    t.equal(new URL(page.url()).hash, '', 'nothing in the fragment')
    t.same(await violations(), [], 'no CSP refusal on the signed-in console')

    // The provider is this account's only way in (no password): the service refuses, the console says why.
    await page.getByRole('button', { name: 'Unlink Test Provider (grace@example.test)' }).click()
    const message = page.locator('#identities-message')
    await message.filter({ hasText: 'last way to sign in' }).waitFor()
    t.equal(await message.getAttribute('data-kind'), 'error')
    t.equal(await focusedId(page, 'identities-title'), 'identities-title', 'the focus on the section with the message')
    t.equal(await identity.count(), 1, 'still linked')
    t.same(await violations(), [], 'no CSP refusal after the unlink attempt')
  })

  t.test('cancelling at the provider lands on the console with #error=access_denied: the message shows, the address bar is cleared', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(`${baseUrl}/account`)
    const signIn = page.getByRole('link', { name: 'Sign in with Test Provider' })
    await Promise.all([page.waitForURL(url => url.origin === provider.issuer), signIn.click()])
    // Where the callback sends the browser, before the console's script takes the fragment away.
    const landing = page.waitForRequest(request => request.isNavigationRequest() && request.url().startsWith(`${baseUrl}/account`))
    await page.click('text=[ Cancel ]')
    t.equal((await landing).url(), `${baseUrl}/account`, 'back to the console (the fragment is never sent)')
    const status = page.locator('#status')
    await status.filter({ hasText: 'cancelled at the provider' }).waitFor()
    t.equal(await status.getAttribute('data-kind'), 'error')
    t.equal(await focusedId(page, 'status'), 'status', 'the focus on the message')
    t.equal(page.url(), `${baseUrl}/account`, 'the fragment is gone from the address bar')
    t.notOk(await page.locator('#signed-out').isHidden(), 'the sign-in is offered')
    t.same(await violations(), [])
  })

  t.test('a landing with another #error= code shows its own message', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(`${baseUrl}/account#error=account_exists`)
    await page.locator('#status').filter({ hasText: 'exists already' }).waitFor()
    t.equal(await focusedId(page, 'status'), 'status')
    t.same(await violations(), [])
  })

  t.test('Unlink asks for the password once the sign-in is old, then unlinks the provider', async (t) => {
    const user = { first_name: 'Ada', last_name: 'Lovelace', username: 'ada', email: 'ada@example.test', password: 'analytical engine 1843' }
    t.equal((await call(baseUrl, 'POST', '/auth/register', { body: user })).status, 201)
    const { id: userId } = (await server.store.findUserByEmail(user.email))!
    t.ok(await server.store.linkIdentity({ provider: 'test', subject: 'ada-at-the-provider', userId, email: user.email }, new Date()))
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(`${baseUrl}/account`)
    await page.fill('#login-email', user.email)
    await page.fill('#login-password', user.password)
    await page.click('#login-form button[type=submit]')
    await page.locator('#identities li[data-provider=test]').waitFor()
    // The password sign-in was an hour ago, as far as the service knows: unlinking needs a new proof.
    for (const session of await server.store.listLiveSessions(userId, new Date())) {
      await server.store.markSessionAuthenticated(session.id, new Date(Date.now() - 3600_000))
    }
    await page.getByRole('button', { name: 'Unlink Test Provider (ada@example.test)' }).click()
    await page.locator('#identities-title ~ #security-reauth').waitFor()
    t.equal(await focusedId(page, 'security-password'), 'security-password', 'the password prompt in the section, the focus on it')
    await page.fill('#security-password', user.password)
    await page.click('#security-reauth button[type=submit]')
    await page.locator('#identities-message').filter({ hasText: 'Test Provider is unlinked' }).waitFor()
    t.equal(await page.locator('#identities li').innerText(), 'No provider linked.')
    t.equal(await focusedId(page, 'identities-title'), 'identities-title')
    t.same(await server.store.listIdentities(userId), [], 'unlinked at the service')
    t.same(await violations(), [])
  })

  t.test('with TOTP on, the provider\'s sign-in lands on the code step and the app\'s code finishes it', async (t) => {
    provider.accounts.set('linus', { email: 'linus@example.test', email_verified: true, given_name: 'Linus', family_name: 'Pauling' })
    const first = await watchedPage(browser, t)
    await signInAtProvider(first.page, baseUrl, provider.issuer, 'linus')
    await first.page.locator('#signed-in-title').filter({ hasText: 'linus@example.test' }).waitFor()
    const cookies = Object.fromEntries((await first.context.cookies(baseUrl)).map(cookie => [cookie.name, cookie.value]))
    const { secret } = await enableTotp(server, 'cookie', { accessToken: cookies.accessToken, refreshToken: cookies.refreshToken } as unknown as Session)

    const { page, violations } = await watchedPage(browser, t)
    await signInAtProvider(page, baseUrl, provider.issuer, 'linus')
    await page.locator('#mfa-form').waitFor()
    t.equal(page.url(), `${baseUrl}/account`, 'the mfa_token is gone from the address bar')
    t.equal(await focusedId(page, 'mfa-title'), 'mfa-title', 'the focus on the code step')
    t.match(await page.locator('#mfa-hint').innerText(), /provider has signed you in/)
    t.notOk((await page.context().cookies(baseUrl)).some(cookie => cookie.name === 'accessToken'), 'no session before the code')
    await awayFromStepEdge()
    // The confirming code's time step is used: the next step's code is within the one step of drift.
    await page.fill('#mfa-code', codeAt(secret, 1))
    await page.click('#mfa-form button[type=submit]')
    await page.locator('#signed-in-title').filter({ hasText: 'linus@example.test' }).waitFor()
    t.equal(await focusedId(page, 'signed-in-title'), 'signed-in-title')
    await page.locator('#identities li[data-provider=test]').waitFor()
    t.same(await violations(), [])
  })

  t.test('a landing with #mfa_token= opens the code step; a spent token starts the sign-in over', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(`${baseUrl}/account#mfa_token=not-a-real-token`)
    await page.locator('#mfa-form').waitFor()
    t.match(await page.locator('#mfa-hint').innerText(), /provider has signed you in/)
    t.equal(await focusedId(page, 'mfa-title'), 'mfa-title')
    t.equal(page.url(), `${baseUrl}/account`, 'the token is gone from the address bar')
    await page.fill('#mfa-code', '123456')
    await page.click('#mfa-form button[type=submit]')
    await page.locator('#login-message').filter({ hasText: 'Sign in again' }).waitFor()
    t.ok(await page.locator('#mfa-form').isHidden(), 'back to the first step')
    t.same(await violations(), [])
  })
})

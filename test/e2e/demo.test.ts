import { existsSync } from 'node:fs'
import t from 'tap'
import { startServer } from '../fixtures/process.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

const CHROMIUM = '/usr/bin/chromium'

t.test('the /demo page registers, logs in, shows and edits the profile, refreshes and logs out with HttpOnly cookies only', {
  skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM}: install Debian's chromium (apt-get install chromium) to run the browser test`
}, async (t) => {
  const { chromium } = await import('playwright-core')
  const { baseUrl } = await startServer(t, { API_VARIANT: 'cookie', DEMO: 'true', COOKIE_SECURE: 'false', DATABASE_URL: temporaryDatabase(t) })
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  const context = await browser.newContext()
  const page = await context.newPage()
  const pageErrors: string[] = []
  page.on('pageerror', error => pageErrors.push(error.message))
  const status = page.locator('#status')
  const profile = (field: string) => page.locator(`#profile [data-field="${field}"]`)
  const cookie = async (name: string) => (await context.cookies()).find(candidate => candidate.name === name)

  await page.goto(`${baseUrl}/demo`)
  t.equal(new URL(page.url()).pathname, '/demo/', '/demo leads to the page')
  t.equal(await page.title(), 'account-service demo')

  await page.fill('#register-form [name=first_name]', 'Ada')
  await page.fill('#register-form [name=last_name]', 'Lovelace')
  await page.fill('#register-form [name=username]', 'ada')
  await page.fill('#register-form [name=email]', 'ada@example.com')
  await page.fill('#register-form [name=password]', 'analytical engine')
  await page.click('#register-form button')
  await status.filter({ hasText: 'Registered' }).waitFor()
  t.match(await status.textContent(), /^Registered ada@example\.com as user 1\./)

  t.equal(await page.inputValue('#login-form [name=email]'), 'ada@example.com', 'the email is carried over to the login form')
  await page.fill('#login-form [name=password]', 'wrong password')
  await page.click('#login-form button')
  await status.filter({ hasText: 'Login failed' }).waitFor()
  t.match(await status.textContent(), /INVALID_CREDENTIALS/, 'a wrong password is shown with its code')
  await page.fill('#login-form [name=email]', 'ada@example.com')
  await page.fill('#login-form [name=password]', 'analytical engine')
  await page.click('#login-form button')
  await status.filter({ hasText: 'Logged in' }).waitFor()
  t.ok(await page.isVisible('#profile'))
  t.equal(await profile('first_name').textContent(), 'Ada')
  t.equal(await profile('username').textContent(), 'ada')
  t.equal(await profile('email').textContent(), 'ada@example.com')

  const accessCookie = await cookie('accessToken')
  const refreshCookie = await cookie('refreshToken')
  t.ok(accessCookie?.httpOnly, 'the access token cookie is HttpOnly')
  t.ok(refreshCookie?.httpOnly, 'the refresh token cookie is HttpOnly')
  t.equal(refreshCookie?.path, '/auth')
  t.equal(await page.evaluate(() => document.cookie), '', 'page script sees no cookie')
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))
  t.notOk(stored.includes(accessCookie?.value as string), 'no token in web storage')

  await page.fill('#edit-form [name=first_name]', 'Augusta')
  await page.fill('#edit-form [name=username]', 'countess')
  await page.click('#edit-form button')
  await status.filter({ hasText: 'Profile updated' }).waitFor()
  t.equal(await profile('first_name').textContent(), 'Augusta')
  t.equal(await profile('username').textContent(), 'countess')
  t.equal(await profile('last_name').textContent(), 'Lovelace', 'fields left empty are not changed')

  await page.reload()
  await profile('first_name').filter({ hasText: 'Augusta' }).waitFor()
  t.pass('a reload shows the profile again, from the cookie')

  await page.click('#refresh')
  await status.filter({ hasText: 'Access token renewed' }).waitFor()
  t.not((await cookie('refreshToken'))?.value, refreshCookie?.value, 'the refresh cookie rotated')
  t.not((await cookie('accessToken'))?.value, undefined)

  await page.click('#logout')
  await status.filter({ hasText: 'Logged out' }).waitFor()
  t.ok(await page.isVisible('#login-form'))
  t.notOk(await page.isVisible('#profile'))
  t.same((await context.cookies()).map(candidate => candidate.name), [], 'both cookies cleared')
  const afterLogout = await page.evaluate(async () => (await fetch('../auth/refresh-token', { method: 'POST' })).status)
  t.equal(afterLogout, 401, 'the session is over')
  t.same(pageErrors, [], 'no script errors')
})

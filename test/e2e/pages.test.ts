import type { Page } from 'playwright-core'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { registerAt } from '../fixtures/factories.js'
import { focusedId, launchChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import { call, freePort, setCookieValue } from '../fixtures/http.js'
import { startMailbox, tokenFromLink, type Mailbox } from '../fixtures/mailbox.js'
import { runningClock } from '../fixtures/clock.js'

const OTHER_DEVICE = 'OtherDevice/1.0 (a phone in a drawer)'

t.test('the pages in Chromium', {
  skip: skipWithoutChromium
}, async (t) => {
  const browser = await launchChromium(t)
  const mailbox: Mailbox = await startMailbox(t)
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  // Plain HTTP on 127.0.0.1 needs COOKIE_SECURE=false. REAUTH_MAX_AGE=2s: the console's email change must ask for the password.
  const clock = runningClock()
  const server = await build(t, { clock, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', REAUTH_MAX_AGE: '2s' } })
  await server.listen({ host: '127.0.0.1', port })

  const logIn = (email: string, password: string, userAgent = 'node') =>
    call(baseUrl, 'POST', '/auth/login', { body: { email, password }, headers: { 'user-agent': userAgent } })
  const signIn = async (page: Page, email: string, password: string) => {
    await page.fill('#login-email', email)
    await page.fill('#login-password', password)
    await page.click('#login-form button[type=submit]')
    await page.locator('#signed-in-title').filter({ hasText: email }).waitFor()
  }

  t.test('the mailed reset link opens the page, the policy\'s answers show, the new password is set and signs in', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    const user = await registerAt(baseUrl)
    t.equal((await call(baseUrl, 'POST', '/auth/forgot-password', { body: { email: user.email } })).status, 202)
    const mail = await mailbox.next(user.email, 'Reset your password')
    const link = `${baseUrl}/reset-password#token=${tokenFromLink(mail, baseUrl, '/reset-password')}`
    t.ok(mail.text?.includes(link), 'the link as mailed')

    await page.goto(link)
    await page.locator('#reset-form').waitFor()
    t.equal(page.url(), `${baseUrl}/reset-password`, 'the token is taken out of the address bar')
    const message = page.locator('#reset-message')
    const setPassword = async (password: string, repeat = password) => {
      await page.fill('#new-password', password)
      await page.fill('#repeat-password', repeat)
      await page.click('#reset-form button')
    }
    await setPassword('short')
    await message.filter({ hasText: 'Too short' }).waitFor()
    t.equal(await message.textContent(), 'Too short: a password needs at least 8 characters.')
    t.equal(await page.getAttribute('#new-password', 'aria-invalid'), 'true')
    await setPassword('password')
    await message.filter({ hasText: 'most commonly used' }).waitFor()
    t.pass('a common password is refused with the policy\'s answer')
    await setPassword('a fresh start 2026', 'a fresh start 2062')
    await message.filter({ hasText: 'differ' }).waitFor()
    await setPassword('a fresh start 2026')
    await page.locator('#done-title').waitFor()
    t.equal(await focusedId(page, 'done-title'), 'done-title', 'the focus moves to the result')

    await page.click('text=Sign in with your new password')
    await page.waitForURL(`${baseUrl}/account`)
    await signIn(page, user.email, 'a fresh start 2026')
    t.equal((await logIn(user.email, user.password)).status, 401, 'the old password is refused')

    await page.goto(link)
    await page.fill('#new-password', 'another fresh start')
    await page.fill('#repeat-password', 'another fresh start')
    await page.click('#reset-form button')
    await page.locator('#again-reason').filter({ hasText: 'used already' }).waitFor()
    t.pass('a used link offers a new one')
    await page.fill('#again-email', user.email)
    await page.click('#again-form button')
    await page.locator('#again-message').filter({ hasText: 'on its way' }).waitFor()
    await mailbox.next(user.email, 'Reset your password')
    t.pass('and the new link is mailed')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('the mailed verification link verifies by the page\'s POST; a used link offers a new one', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    const user = await registerAt(baseUrl)
    const link = `${baseUrl}/verify-email#token=${tokenFromLink(await mailbox.next(user.email, 'Verify your email address'), baseUrl, '/verify-email')}`
    const verified = async () => {
      const login = await logIn(user.email, user.password)
      const account = await call(baseUrl, 'GET', '/auth/account', { headers: { cookie: `accessToken=${setCookieValue(login.headers, 'accessToken')}` } })
      return account.body.email_verified
    }

    await page.goto(link)
    await page.locator('#verify').waitFor()
    t.equal(await verified(), false, 'opening the link verifies nothing by itself')
    await page.click('#verify')
    await page.locator('#verified-title').waitFor()
    t.equal(await verified(), true, 'the button\'s POST verifies')

    await page.goto(link)
    await page.click('#verify')
    await page.locator('#again-reason').filter({ hasText: 'used already' }).waitFor()
    await page.click('#resend')
    await page.locator('#again-message').filter({ hasText: 'not signed in' }).waitFor()
    t.pass('signed out, a new link is offered through the console')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('at 320 px the console lists another device\'s session, ends it, and changes the email after asking for the password', async (t) => {
    const { context, page, violations } = await watchedPage(browser, t, { viewport: { width: 320, height: 700 } })
    const user = await registerAt(baseUrl)
    const other = await logIn(user.email, user.password, OTHER_DEVICE)
    const otherRefresh = setCookieValue(other.headers, 'refreshToken')

    await page.goto(`${baseUrl}/account`)
    await signIn(page, user.email, user.password)
    const sessions = page.locator('#sessions > li')
    await sessions.nth(1).waitFor()
    t.equal(await sessions.count(), 2)
    // No OpenID Connect provider is configured here: no "Linked sign-in providers" to show.
    await page.locator('#identities-title').waitFor({ state: 'hidden' })
    t.pass('no linked providers section without a provider')
    const current = page.locator('#sessions > li[data-current]')
    t.match(await current.textContent(), /This device/)
    t.match(await current.textContent(), /Chrome on Linux/)
    const otherItem = sessions.filter({ hasText: OTHER_DEVICE })
    t.match(await otherItem.textContent(), /Address 127\.0\.0\.1 · last used/)
    t.notMatch(await otherItem.textContent(), /This device/)
    t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 320), 'nothing wider than 320 px')

    await otherItem.getByRole('button').click()
    await page.locator('#sessions-message').filter({ hasText: 'The session is ended' }).waitFor()
    t.equal(await sessions.count(), 1)
    const refused = await call(baseUrl, 'POST', '/auth/refresh-token', { headers: { cookie: `refreshToken=${otherRefresh}` } })
    t.equal(refused.status, 401, 'the other device can no longer refresh')
    await page.locator('#events li').filter({ hasText: 'Session ended' }).waitFor()
    t.pass('the security activity shows it')

    await logIn(user.email, user.password, OTHER_DEVICE)
    await page.click('#end-others')
    await page.locator('#sessions-message').filter({ hasText: 'Signed out 1 other device.' }).waitFor()
    t.equal(await sessions.count(), 1, 'sign out everywhere else')

    clock.advance(2100) // past REAUTH_MAX_AGE on the app's clock (the login was the last password proof)
    await page.fill('#email-new', `new-${user.email}`)
    await page.click('#email-form button[type=submit]')
    await page.locator('#email-password').waitFor()
    t.equal(await focusedId(page, 'email-password'), 'email-password', 'the password is asked for, with the focus on it')
    await page.fill('#email-password', user.password)
    await page.click('#email-form button[type=submit]')
    await page.locator('#email-message').filter({ hasText: `now new-${user.email}` }).waitFor()
    t.equal(await page.locator('#signed-in-title').textContent(), `Signed in as new-${user.email}`)

    const cookies = await context.cookies()
    t.ok(cookies.length > 0 && cookies.every(cookie => cookie.httpOnly), 'every cookie is HttpOnly')
    t.equal(await page.evaluate(() => document.cookie), '', 'page script reads no cookie')
    t.equal(await page.evaluate(() => localStorage.length + sessionStorage.length), 0, 'nothing in web storage')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('keyboard only, in dark mode: Tab and Enter sign in, then sign out', async (t) => {
    const { page, violations } = await watchedPage(browser, t, { colorScheme: 'dark' })
    const user = await registerAt(baseUrl)
    await page.goto(`${baseUrl}/account`)
    await page.locator('#login-form').waitFor()
    t.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(20, 23, 28)', 'the dark colours')

    await page.keyboard.press('Tab')
    t.equal(await focusedId(page, 'login-email'), 'login-email', 'the first Tab reaches the email field')
    await page.keyboard.type(user.email)
    await page.keyboard.press('Tab')
    t.equal(await focusedId(page, 'login-password'), 'login-password')
    await page.keyboard.type(user.password)
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => document.activeElement?.id === 'signed-in-title')
    t.pass('Enter signs in and the focus moves to the console')
    await page.keyboard.press('Tab')
    t.equal(await focusedId(page, 'sign-out'), 'sign-out', 'the next Tab reaches "Sign out"')
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => document.activeElement?.id === 'login-title')
    t.equal(await page.locator('#status').textContent(), 'You are signed out.')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('signed out, the console registers an account and mails a reset link', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(`${baseUrl}/account`)
    await page.locator('#login-title').waitFor()
    t.ok(await page.locator('#oidc-login').isHidden(), 'no "Sign in with …" without a provider')
    await page.click('#register summary')
    await page.fill('#register-first-name', 'Grace')
    await page.fill('#register-last-name', 'Hopper')
    await page.fill('#register-username', 'grace')
    await page.fill('#register-email', 'grace@example.com')
    await page.fill('#register-password', 'password')
    await page.click('#register-form button')
    await page.locator('#register-message').filter({ hasText: 'most commonly used' }).waitFor()
    t.equal(await page.getAttribute('#register-password', 'aria-invalid'), 'true', 'the refused field is marked')
    await page.fill('#register-password', 'compiler 1952 cobol')
    await page.click('#register-form button')
    await page.locator('#status').filter({ hasText: 'Your account is created' }).waitFor()
    t.equal(await page.inputValue('#login-email'), 'grace@example.com', 'the sign-in form is filled in')
    t.equal(await focusedId(page, 'login-password'), 'login-password')
    await mailbox.next('grace@example.com', 'Verify your email address')

    await page.click('#forgot summary')
    await page.fill('#forgot-email', 'grace@example.com')
    await page.click('#forgot-form button')
    await page.locator('#forgot-message').filter({ hasText: 'on its way' }).waitFor()
    await mailbox.next('grace@example.com', 'Reset your password')
    t.pass('the reset link is mailed')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('an inline script is refused and reported, so the checks above can see a violation', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(`${baseUrl}/account`)
    await page.evaluate(() => {
      const script = document.createElement('script')
      script.textContent = 'document.title = "injected"'
      document.body.append(script)
    })
    await page.waitForFunction(() => (window as unknown as { cspViolations: string[] }).cspViolations.length > 0)
    t.not(await page.title(), 'injected', 'the inline script did not run')
    t.match((await violations()).join('\n'), /script-src/)
  })
})

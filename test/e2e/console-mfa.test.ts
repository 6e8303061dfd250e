import type { Page } from 'playwright-core'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { registerAt } from '../fixtures/factories.js'
import { focusedId, launchChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import { freePort } from '../fixtures/http.js'
import { awayFromStepEdge, codeAt } from '../fixtures/mfa.js'
import { runningClock } from '../fixtures/clock.js'

/*
 * The console's two-step sign-in and passkeys in Chromium: TOTP turned on from the page (the code
 * computed here from the key the page shows), then a sign-in with its code step; a passkey added with
 * a CDP virtual authenticator, then a sign-in with it. WebAuthn needs an RP ID, which cannot be an IP
 * address: the service is reached as http://localhost:<port>, PUBLIC_URL set to that.
 */

// Short, so that the console must ask for the password before a change (the sign-in is the last proof).
const REAUTH_SECONDS = 4

/**
 * The app's clock: the real time, moved past REAUTH_MAX_AGE by hand instead of waiting for it. The TOTP codes the
 * test types are the real time's: at most a few seconds behind the app's, within the one step either side it takes.
 */
const clock = runningClock()
const pastReauthAge = () => { clock.advance(REAUTH_SECONDS * 1000 + 150) }

t.test('the console\'s two-step sign-in in Chromium', {
  skip: skipWithoutChromium
}, async (t) => {
  const browser = await launchChromium(t)
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const server = await build(t, { clock, env: { PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', REAUTH_MAX_AGE: `${REAUTH_SECONDS}s` } })
  await server.listen({ host: '127.0.0.1', port })

  const typePassword = async (page: Page, email: string, password: string) => {
    await page.fill('#login-email', email)
    await page.fill('#login-password', password)
    await page.click('#login-form button[type=submit]')
  }
  const signedIn = async (page: Page, email: string) => {
    await page.locator('#signed-in-title').filter({ hasText: email }).waitFor()
    await page.waitForFunction(() => document.activeElement?.id === 'signed-in-title')
  }
  const signOut = async (page: Page) => {
    await page.click('#sign-out')
    await page.locator('#status').filter({ hasText: 'You are signed out.' }).waitFor()
  }
  /** The password prompt a change brings up once the sign-in is older than REAUTH_MAX_AGE; with TOTP on, a code too. */
  const confirmPassword = async (page: Page, password: string, code?: string) => {
    await page.locator('#security-reauth').waitFor()
    t.equal(await focusedId(page, 'security-password'), 'security-password', 'the password is asked for, with the focus on it')
    await page.fill('#security-password', password)
    t.equal(await page.locator('#security-code').isVisible(), code !== undefined, code === undefined ? 'no code asked for without TOTP' : 'with TOTP on, a code is asked for too')
    if (code !== undefined) await page.fill('#security-code', code)
    await page.click('#security-reauth button[type=submit]')
  }

  t.test('TOTP turned on from its QR code and key, then a sign-in asks for the code', async (t) => {
    const { page, violations } = await watchedPage(browser, t)
    const user = await registerAt(baseUrl)
    await page.goto(`${baseUrl}/account`)
    await typePassword(page, user.email, user.password)
    await signedIn(page, user.email)
    t.match(await page.locator('#two-step-status').textContent(), /authenticator app is off/)

    pastReauthAge()
    await page.click('#totp-on')
    await confirmPassword(page, user.password)
    await page.locator('#totp-setup').waitFor()
    t.equal(await focusedId(page, 'totp-setup-title'), 'totp-setup-title', 'the focus moves to the setup')
    t.equal(await page.locator('#totp-qr svg path').count(), 1, 'the QR code is drawn in the page')
    t.ok(((await page.getAttribute('#totp-qr svg path', 'd')) ?? '').length > 1000, 'with its modules')
    const secret = (await page.locator('#totp-secret').textContent()) ?? ''
    t.match(secret, /^[A-Z2-7]{16,}$/, 'the key, base32, to type in')

    await page.fill('#totp-code', '12345')
    await page.click('#totp-setup button[type=submit]')
    await page.locator('#totp-setup-message').filter({ hasText: /./ }).waitFor()
    t.equal(await page.getAttribute('#totp-code', 'aria-invalid'), 'true', 'a wrong code is refused, the field marked')

    await awayFromStepEdge()
    await page.fill('#totp-code', codeAt(secret))
    await page.click('#totp-setup button[type=submit]')
    await page.locator('#recovery-box').waitFor()
    t.equal(await focusedId(page, 'recovery-title'), 'recovery-title', 'the focus moves to the recovery codes')
    const recoveryCodes = await page.locator('#recovery-codes li').allTextContents()
    t.equal(recoveryCodes.length, 10, 'ten recovery codes, shown once')
    t.match(await page.locator('#two-step-status').textContent(), /on; 10 recovery codes left/)
    t.ok(await page.locator('#totp-setup').isHidden(), 'the setup is gone')

    await signOut(page)
    await typePassword(page, user.email, user.password)
    await page.locator('#mfa-form').waitFor()
    t.equal(await focusedId(page, 'mfa-title'), 'mfa-title', 'the right password moves the focus to the code step')
    t.ok(await page.locator('#login-form').isHidden())
    await page.fill('#mfa-code', codeAt(secret, 5))
    await page.click('#mfa-form button[type=submit]')
    await page.locator('#mfa-message').filter({ hasText: 'not right' }).waitFor()
    t.equal(await page.getAttribute('#mfa-code', 'aria-invalid'), 'true', 'a code from outside the time window is refused, the field marked')
    await page.fill('#mfa-code', codeAt(secret, 1))
    await page.click('#mfa-form button[type=submit]')
    await signedIn(page, user.email)
    t.pass('the code signs in')

    await signOut(page)
    await typePassword(page, user.email, user.password)
    await page.locator('#mfa-form').waitFor()
    await page.fill('#mfa-code', recoveryCodes[0])
    await page.click('#mfa-form button[type=submit]')
    await signedIn(page, user.email)
    t.match(await page.locator('#two-step-status').textContent(), /9 recovery codes left/, 'a recovery code signs in, once')

    pastReauthAge()
    await page.click('#totp-off')
    // Turning the second factor off takes both factors; the sign-in just spent the current TOTP step, so a recovery code.
    await confirmPassword(page, user.password, recoveryCodes[1])
    await page.locator('#two-step-message').filter({ hasText: 'is off' }).waitFor()
    await signOut(page)
    await typePassword(page, user.email, user.password)
    await signedIn(page, user.email)
    t.pass('turned off, the password alone signs in again')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('a passkey added, renamed, used to sign in and removed', async (t) => {
    const { context, page, violations } = await watchedPage(browser, t)
    const user = await registerAt(baseUrl)
    await page.goto(`${baseUrl}/account`)
    const cdp = await context.newCDPSession(page)
    await cdp.send('WebAuthn.enable', { enableUI: false })
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
    })
    // The sign-in section shows once the page has learnt that nobody is signed in: wait for it.
    const offered = await page.locator('#passkey-login').waitFor({ state: 'visible', timeout: 10_000 }).then(() => true, () => false)
    t.ok(offered, 'the browser can: "Sign in with a passkey" is offered')
    await typePassword(page, user.email, user.password)
    await signedIn(page, user.email)
    t.equal(await page.locator('#passkeys li').textContent(), 'No passkey yet.')

    pastReauthAge()
    await page.fill('#passkey-name', 'Test laptop')
    await page.click('#passkey-add-form button[type=submit]')
    await confirmPassword(page, user.password)
    await page.locator('#passkeys-message').filter({ hasText: '"Test laptop" is added' }).waitFor()
    t.equal(await focusedId(page, 'passkeys-title'), 'passkeys-title')
    const item = page.locator('#passkeys li[data-passkey]')
    t.equal(await item.count(), 1)
    t.match(await item.textContent(), /Test laptop.*not used yet/)
    t.match(await page.locator('#two-step-status').textContent(), /You have a passkey/)

    // This sign-in used the password alone: a second factor added now needs the passkey there is (issue 33,
    // finding 3), which the page asks the authenticator for before the setup begins.
    await page.click('#totp-on')
    await page.locator('#totp-setup').waitFor()
    await page.locator('#events li').filter({ hasText: /confirmed/i }).first().waitFor()
    t.pass('turning TOTP on stepped up with the passkey')

    await item.getByLabel('New name for "Test laptop"').fill('Work laptop')
    await item.getByRole('button', { name: 'Rename' }).click()
    await page.locator('#passkeys-message').filter({ hasText: 'now called "Work laptop"' }).waitFor()
    t.match(await item.locator('strong').textContent(), 'Work laptop')

    // Signed out, the email input's passkey autofill (conditional mediation) waits for a passkey; the virtual
    // authenticator answers it at once, as a person choosing the passkey there does. (The "Sign in with a passkey"
    // button, which ends that waiting request first: test/e2e/email-code-pages.test.ts.)
    await signOut(page)
    await signedIn(page, user.email)
    t.match(await page.locator('#passkeys li[data-passkey]').textContent(), /Work laptop.*last used/, 'the passkey signs in from the autofill, no password typed')
    await page.locator('#events li').filter({ hasText: 'Signed in' }).first().waitFor()

    await page.getByRole('button', { name: 'Remove the passkey "Work laptop"' }).click()
    await page.locator('#passkeys-message').filter({ hasText: 'is removed' }).waitFor()
    t.equal(await page.locator('#passkeys li').textContent(), 'No passkey yet.')
    t.equal(await focusedId(page, 'passkeys-title'), 'passkeys-title')

    await signOut(page)
    // The autofill offers the removed passkey (the authenticator still holds it): refused, and so is the button's.
    await page.locator('#login-message').filter({ hasText: /./ }).waitFor()
    t.ok(await page.locator('#signed-in').isHidden(), 'the removed passkey signs in no more from the autofill')
    await page.click('#passkey-login')
    await page.locator('#login-message').filter({ hasText: /./ }).waitFor()
    t.ok(await page.locator('#signed-in').isHidden(), 'nor with the button')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })
})

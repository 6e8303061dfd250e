import type { ParsedMail } from 'mailparser'
import * as client from 'openid-client'
import type { CDPSession, Page } from 'playwright-core'
import t from 'tap'
import { focusedId, sharedChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import { build } from '../fixtures/build.js'
import { loggedInUser, registerAt, registerUser } from '../fixtures/factories.js'
import { call, freePort } from '../fixtures/http.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'
import { codeAt, enableTotp } from '../fixtures/mfa.js'
import { runningClock } from '../fixtures/clock.js'
import { addClient, appSite, authorizationRequest, relyingParty } from '../fixtures/oauth.js'

/*
 * Signing in without a password in Chromium (issue 36): "Email me a code" on the console and on an app's
 * sign-in page, the code read from the mail a real SMTP server received; the mailed link filling the code
 * in; a sign-up with a code and no password, then a passkey; the second factor after a code; passkey
 * autofill (conditional mediation) with a CDP virtual authenticator. One browser and one service for the
 * file (cookie variant, on localhost: an RP ID cannot be an IP address).
 */

const chromium = () => sharedChromium(t)
const REAUTH_SECONDS = 6
// The app's clock: the real time, moved past REAUTH_MAX_AGE by hand instead of waiting for it.
const clock = runningClock()
const pastReauthAge = () => { clock.advance(REAUTH_SECONDS * 1000 + 150) }

/** The code of a sign-in mail, and the link to the sign-in page that fills it in. */
function codeMail (mail: ParsedMail, baseUrl: string, email: string): { code: string, link: string } {
  const text = mail.text ?? ''
  const escaped = `${baseUrl}/account#`.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
  const link = new RegExp(`${escaped}\\S+`).exec(text)?.[0]
  if (link === undefined) throw new Error(`no sign-in link in: ${text}`)
  const values = new URLSearchParams(new URL(link).hash.slice(1))
  const code = values.get('email_code') ?? ''
  if (!/^\d{6}$/.test(code) || values.get('email') !== email) throw new Error(`the link does not carry the code and the address: ${link}`)
  if (!new RegExp(`\\b${code}\\b`).test(text.replace(link, ''))) throw new Error(`the code is not written out in: ${text}`)
  return { code, link }
}

/** Another code than `code` (one digit changed), for a wrong try. */
const wrong = (code: string) => `${(Number(code[0]) + 1) % 10}${code.slice(1)}`

t.test('signing in without a password, in Chromium', { skip: skipWithoutChromium }, async (t) => {
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const mailbox = await startMailbox(t)
  // REAUTH_MAX_AGE short, so that a password-free account's change asks for a proof (the mailed code) again.
  const server = await build(t, { clock, env: { PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', SMTP_URL: mailbox.smtpUrl, REAUTH_MAX_AGE: `${REAUTH_SECONDS}s` } })
  await server.listen({ host: 'localhost', port })
  const taken = new Set<ParsedMail>()
  /** The code and link of the next sign-in mail to `email` (registering mails a verification link first). */
  const nextCode = async (email: string) => {
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      const mail = mailbox.received.find(mail => !taken.has(mail) && mail.text?.includes('#email_code=') && mail.text.includes(encodeURIComponent(email)))
      if (mail !== undefined) {
        taken.add(mail)
        return codeMail(mail, baseUrl, email)
      }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    throw new Error(`no sign-in mail to ${email}`)
  }

  /** A virtual platform authenticator (Touch ID, Windows Hello) for the page. */
  const addAuthenticator = async (page: Page): Promise<{ cdp: CDPSession, authenticatorId: string }> => {
    const cdp = await page.context().newCDPSession(page)
    await cdp.send('WebAuthn.enable', { enableUI: false })
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
    })
    return { cdp, authenticatorId }
  }
  const signedIn = async (page: Page, email: string) => {
    await page.locator('#signed-in-title').filter({ hasText: email }).waitFor()
  }
  /** On a sign-in page: the address typed, "Email me a code", until the code step is shown. */
  const emailMeACode = async (page: Page, email: string) => {
    await page.fill('#login-email', email)
    await page.getByRole('button', { name: 'Email me a code' }).click()
    await page.locator('#mailed-code-form').waitFor()
  }

  t.test('the console: "Email me a code", a wrong code refused, the mailed code pasted with a space signs in', async (t) => {
    const { page, violations } = await watchedPage(await chromium(), t)
    const user = await registerAt(baseUrl)
    await page.goto(`${baseUrl}/account`)
    await page.getByRole('button', { name: 'Email me a code' }).click()
    await page.locator('#login-message').filter({ hasText: 'Type your email address first' }).waitFor()
    t.equal(await page.getAttribute('#login-email', 'aria-invalid'), 'true', 'no address typed: the field is marked, nothing is sent')

    await emailMeACode(page, user.email)
    t.equal(await focusedId(page, 'mailed-code'), 'mailed-code', 'the focus moves to the code field')
    t.match(await page.textContent('#mailed-code-hint'), user.email, 'the step names the address')
    t.equal(await page.getAttribute('#mailed-code', 'inputmode'), 'numeric')
    t.equal(await page.getAttribute('#mailed-code', 'autocomplete'), 'one-time-code', 'the browser may fill the code in from the mail')
    const { code } = await nextCode(user.email)

    await page.fill('#mailed-code', wrong(code))
    await page.click('#mailed-code-form button[type=submit]')
    await page.locator('#mailed-code-message').filter({ hasText: 'not right' }).waitFor()
    t.equal(await page.getAttribute('#mailed-code', 'aria-invalid'), 'true', 'a wrong code is refused, the field marked')

    await page.fill('#mailed-code', ` ${code.slice(0, 3)} ${code.slice(3)} `)
    await page.click('#mailed-code-form button[type=submit]')
    await signedIn(page, user.email)
    t.equal(await focusedId(page, 'signed-in-title'), 'signed-in-title', 'the pasted code (spaces taken out) signs in, the focus on the console')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('the console: the mailed link fills the code in, and is gone from the address bar', async (t) => {
    const { page, violations } = await watchedPage(await chromium(), t)
    const user = await registerAt(baseUrl)
    t.equal((await call(baseUrl, 'POST', '/auth/email-code', { body: { email: user.email } })).status, 202)
    const { code, link } = await nextCode(user.email)
    await page.goto(link)
    await page.locator('#mailed-code-form').waitFor()
    t.equal(await page.inputValue('#mailed-code'), code, 'the code is filled in')
    t.equal(new URL(page.url()).hash, '', 'the code is taken out of the address bar')
    await page.waitForFunction(() => document.activeElement?.matches('#mailed-code-form button[type=submit]'))
    t.pass('the focus on the button: nothing is sent until it is pressed')
    t.ok(await page.locator('#signed-in').isHidden(), 'opening the link (as a mail scanner does) signs nobody in')
    await page.click('#mailed-code-form button[type=submit]')
    await signedIn(page, user.email)
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('the console: with TOTP on, the code leads to the authenticator app\'s code', async (t) => {
    const { page, violations } = await watchedPage(await chromium(), t)
    const session = await loggedInUser(server, 'cookie')
    // A verified address: on a never-verified account the code's proof would remove the registrant's second factor.
    const token = tokenFromLink(await mailbox.next(session.user.email, 'Verify your email address'), baseUrl, '/verify-email')
    t.equal((await call(baseUrl, 'POST', '/auth/verify-email', { body: { token } })).status, 204)
    const { secret } = await enableTotp(server, 'cookie', session)
    await page.goto(`${baseUrl}/account`)
    await emailMeACode(page, session.user.email)
    await page.fill('#mailed-code', (await nextCode(session.user.email)).code)
    await page.click('#mailed-code-form button[type=submit]')
    await page.locator('#mfa-form').waitFor()
    t.equal(await focusedId(page, 'mfa-title'), 'mfa-title', 'the right code moves the focus to the second step')
    t.match(await page.textContent('#mfa-hint'), /code from the mail is right/)
    t.ok(await page.locator('#mailed-code-form').isHidden())
    await page.fill('#mfa-code', codeAt(secret, 1))
    await page.click('#mfa-form button[type=submit]')
    await signedIn(page, session.user.email)
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('the console: an address with no account signs up with the code and its name, no password, then adds a passkey that signs in', async (t) => {
    const { page, violations } = await watchedPage(await chromium(), t)
    const email = 'grace@example.test'
    await page.goto(`${baseUrl}/account`)
    await addAuthenticator(page)
    await emailMeACode(page, email)
    await page.fill('#mailed-code', (await nextCode(email)).code)
    await page.click('#mailed-code-form button[type=submit]')
    await page.locator('#mailed-code-signup').waitFor()
    t.equal(await focusedId(page, 'signup-first-name'), 'signup-first-name', 'the sign-up fields are asked for, the focus on the first')
    t.match(await page.textContent('#mailed-code-message'), `No account uses ${email} yet`)
    t.equal(await page.locator('#mailed-code-form input[type=password]').count(), 0, 'no password field')
    t.ok(await page.locator('#signup-username').isVisible(), 'the cookie variant asks for a username')
    await page.fill('#signup-first-name', 'Grace')
    await page.fill('#signup-last-name', 'Hopper')
    await page.fill('#signup-username', 'grace_h')
    t.equal(await page.textContent('#mailed-code-form button[type=submit]'), 'Create the account')
    await page.click('#mailed-code-form button[type=submit]')
    await signedIn(page, email)
    await page.locator('#status').filter({ hasText: `Your account is created, and ${email} is verified` }).waitFor()
    t.equal(await focusedId(page, 'passkey-offer-title'), 'passkey-offer-title', 'a passkey is offered, the focus on the offer')
    const created = await server.store.findUserByEmail(email)
    t.equal(created?.passwordHash, null, 'the account has no password')
    t.equal(created?.emailVerified, true, 'the code proved the address')

    await page.click('#passkey-offer-add')
    await page.locator('#passkeys-message').filter({ hasText: 'is added' }).waitFor()
    t.ok(await page.locator('#passkey-offer').isHidden(), 'the offer is gone once the passkey is added')
    t.equal(await page.locator('#passkeys li[data-passkey]').count(), 1)

    // Signed out, the passkey signs in from the email input's autofill (the virtual authenticator answers the
    // conditional request at once, as a person choosing it there does): no password, ever.
    await page.click('#sign-out')
    await page.locator('#status').filter({ hasText: 'You are signed out.' }).waitFor()
    await signedIn(page, email)
    await page.locator('#events li').filter({ hasText: 'Signed in with a passkey' }).first().waitFor()
    t.pass('the passkey signs in')

    // Later, a change that needs a recent proof: with no password, a mailed code confirms it.
    pastReauthAge()
    const newEmail = 'grace.hopper@example.test'
    await page.fill('#email-new', newEmail)
    await page.click('#email-form button[type=submit]')
    await page.locator('#reauth').waitFor()
    await page.click('#email-email-code')
    await page.locator('#email-mailed-code').waitFor()
    t.equal(await focusedId(page, 'email-mailed-code'), 'email-mailed-code', 'the code field in place of the password, the focus on it')
    t.ok(await page.locator('#email-password').isHidden())
    await page.fill('#email-mailed-code', (await nextCode(email)).code)
    await page.click('#email-form button[type=submit]')
    await page.locator('#email-message').filter({ hasText: `Your address is now ${newEmail}` }).waitFor()
    t.pass('a code mailed to the old address confirms the email change')

    // And deletion, later still: the password left empty, the confirmation prompt takes a mailed code.
    pastReauthAge()
    await page.check('#delete-confirm')
    await page.click('#delete-form button[type=submit]')
    await page.locator('[aria-labelledby=delete-title] #security-reauth').waitFor()
    await page.click('#security-email-code')
    await page.locator('#security-mailed-code').waitFor()
    t.equal(await focusedId(page, 'security-mailed-code'), 'security-mailed-code', 'the prompt\'s code field in place of the password')
    t.ok(await page.locator('#security-password').isHidden())
    const { code } = await nextCode(newEmail)
    await page.fill('#security-mailed-code', wrong(code))
    await page.click('#security-reauth button[type=submit]')
    await page.locator('#security-reauth-message').filter({ hasText: 'not right' }).waitFor()
    t.equal(await page.getAttribute('#security-mailed-code', 'aria-invalid'), 'true', 'a wrong code is refused, the field marked, the console still signed in')
    await page.fill('#security-mailed-code', code)
    await page.click('#security-reauth button[type=submit]')
    await page.locator('#status').filter({ hasText: 'Your account is deleted' }).waitFor()
    t.equal(await server.store.findUserByEmail(newEmail), undefined, 'a password-free account deletes itself with a mailed code')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('passkey autofill waits on the email input and signs in; "Sign in with a passkey" signs in while it waits', async (t) => {
    const browser = await chromium()
    const first = await watchedPage(browser, t)
    const user = await registerAt(baseUrl)
    await first.page.goto(`${baseUrl}/account`)
    const holder = await addAuthenticator(first.page)
    await first.page.fill('#login-email', user.email)
    await first.page.fill('#login-password', user.password)
    await first.page.click('#login-form button[type=submit]')
    await signedIn(first.page, user.email)
    await first.page.fill('#passkey-name', 'Laptop')
    await first.page.click('#passkey-add-form button[type=submit]')
    await first.page.locator('#passkeys-message').filter({ hasText: 'is added' }).waitFor()
    const { credentials } = await holder.cdp.send('WebAuthn.getCredentials', { authenticatorId: holder.authenticatorId })

    // Another browser whose authenticator gets the passkey only once the page waits on its conditional request:
    // that request found nothing and keeps waiting, so only the button's (modal) request can use it.
    const { page, violations } = await watchedPage(browser, t)
    const other = await addAuthenticator(page)
    await page.goto(`${baseUrl}/account`)
    await page.locator('#login-form').waitFor()
    t.equal(await page.getAttribute('#login-email', 'autocomplete'), 'username webauthn', 'the email input is marked for passkey autofill')
    t.ok(await page.evaluate(() => (window.PublicKeyCredential as any).isConditionalMediationAvailable()), 'and Chromium offers it')
    await other.cdp.send('WebAuthn.addCredential', { authenticatorId: other.authenticatorId, credential: credentials[0] })
    await page.click('#passkey-login')
    await signedIn(page, user.email)
    t.equal(await focusedId(page, 'signed-in-title'), 'signed-in-title', 'the button\'s request signs in while the autofill\'s waited')

    // A third browser holding the passkey from the start (as the second holds it now: its signature counter moved on,
    // and a counter going back is refused as a cloned authenticator): the autofill's request signs in without a click.
    const { credentials: [current] } = await other.cdp.send('WebAuthn.getCredentials', { authenticatorId: other.authenticatorId })
    const third = await watchedPage(browser, t)
    const synced = await addAuthenticator(third.page)
    await synced.cdp.send('WebAuthn.addCredential', { authenticatorId: synced.authenticatorId, credential: current })
    await third.page.goto(`${baseUrl}/account`)
    await signedIn(third.page, user.email)
    t.pass('the autofill signs in')
    t.same([...await first.violations(), ...await violations(), ...await third.violations()], [], 'no CSP violation, no script error')
  })

  t.test('an app\'s sign-in page: "Email me a code", the mailed code, consent, back at the app signed in', async (t) => {
    const app = await appSite(t)
    const user = await registerUser(server, 'cookie')
    const config = await relyingParty(baseUrl, await addClient(server, { name: 'Code Reader', redirectUris: [`${app}/callback`] }))
    const request = await authorizationRequest(config, 'openid email', { redirect_uri: `${app}/callback` })
    const { page, violations } = await watchedPage(await chromium(), t)
    await page.goto(request.url.href)
    await page.locator('#login-form').waitFor()
    t.equal(await page.getAttribute('#login-email', 'autocomplete'), 'username webauthn', 'passkey autofill on the app\'s sign-in page too')
    await emailMeACode(page, user.email)
    await page.fill('#mailed-code', (await nextCode(user.email)).code)
    await page.click('#mailed-code-form button[type=submit]')
    await Promise.all([page.waitForURL(`${app}/callback?**`), page.getByRole('button', { name: 'Allow' }).click()])
    const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: request.verifier, expectedState: request.state })
    t.equal(tokens.claims()?.sub, String(user.id), 'the app gets the person the code signed in')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('an app\'s sign-in page: an address with no account signs up with the code, goes on to the app, and sets a password later in the console', async (t) => {
    const app = await appSite(t)
    const config = await relyingParty(baseUrl, await addClient(server, { name: 'Newcomer App', redirectUris: [`${app}/callback`] }))
    const request = await authorizationRequest(config, 'openid email', { redirect_uri: `${app}/callback` })
    const { page, violations } = await watchedPage(await chromium(), t)
    const email = 'katherine@example.test'
    await page.goto(request.url.href)
    await emailMeACode(page, email)
    await page.fill('#mailed-code', (await nextCode(email)).code)
    await page.click('#mailed-code-form button[type=submit]')
    await page.locator('#mailed-code-signup').waitFor()
    await page.fill('#signup-first-name', 'Katherine')
    await page.fill('#signup-last-name', 'Johnson')
    await page.fill('#signup-username', 'kjohnson')
    await page.click('#mailed-code-form button[type=submit]')
    await Promise.all([page.waitForURL(`${app}/callback?**`), page.getByRole('button', { name: 'Allow' }).click()])
    const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: request.verifier, expectedState: request.state })
    const created = await server.store.findUserByEmail(email)
    t.equal(tokens.claims()?.sub, String(created?.id), 'the new account is the app\'s person')
    t.equal(created?.passwordHash, null, 'with no password')

    // The same browser is signed in to the console (cookie variant): the account sets its first password there.
    await page.goto(`${baseUrl}/account`)
    await signedIn(page, email)
    await page.click('#first-password summary')
    await page.fill('#first-password-new', 'a first password 1906')
    await page.click('#first-password-form button[type=submit]')
    await page.locator('#first-password-message').filter({ hasText: 'Your password is set' }).waitFor()
    await page.click('#sign-out')
    await page.locator('#status').filter({ hasText: 'You are signed out.' }).waitFor()
    await page.fill('#login-email', email)
    await page.fill('#login-password', 'a first password 1906')
    await page.click('#login-form button[type=submit]')
    await signedIn(page, email)
    t.pass('the password set later signs in')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })
})

import type { Page } from 'playwright-core'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { focusedId, sharedChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import { registerAt } from '../fixtures/factories.js'
import { call, freePort, setCookieValue } from '../fixtures/http.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'

// The invitation page of the cookie variant (variant B) in Chromium, to a member of the organisation:
// an owner invites through the API, the invitee opens the mailed link signed out, signs up or in on the
// page and accepts; signed in as another address, the page says so and signs out. One service, one browser.
t.test('the invitation page in Chromium (cookie variant)', { skip: skipWithoutChromium }, async (t) => {
  const root = t
  const mailbox = await startMailbox(t)
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const server = await build(t, { env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false' } })
  await server.listen({ host: '127.0.0.1', port })

  /** The access cookie of a fresh login, as a Cookie header for API calls from the test. */
  const cookieOf = async (email: string, password: string) => {
    const login = await call(baseUrl, 'POST', '/auth/login', { body: { email, password } })
    if (login.status !== 200) throw new Error(`login: ${login.status}`)
    return { cookie: `accessToken=${setCookieValue(login.headers, 'accessToken')}` }
  }
  const owner = await registerAt(baseUrl)
  const ownerCookie = await cookieOf(owner.email, owner.password)
  const org = await call(baseUrl, 'POST', '/orgs', { body: { name: 'Acme Widgets', slug: 'acme-widgets' }, headers: ownerCookie })
  t.equal(org.status, 201, 'the owner creates the organisation')

  /** Invites `email` with `role` and returns the link of the mail it receives. */
  const invite = async (email: string, role: string) => {
    const invitation = await call(baseUrl, 'POST', `/orgs/${org.body.id}/invitations`, { body: { email, role }, headers: ownerCookie })
    if (invitation.status !== 201) throw new Error(`invite: ${invitation.status} ${JSON.stringify(invitation.body)}`)
    const mail = await mailbox.next(email, 'You are invited to join an organisation')
    const link = `${baseUrl}/invitations#token=${tokenFromLink(mail, baseUrl, '/invitations')}`
    t.ok(mail.text?.includes(link), 'the link as mailed')
    return link
  }
  const membershipsOf = async (email: string, password: string) =>
    (await call(baseUrl, 'GET', '/orgs', { headers: await cookieOf(email, password) })).body.orgs.map((entry: { slug: string, role: string }) => `${entry.slug}:${entry.role}`)

  /** Opens the link and checks what the page says before anyone signs in. */
  const openInvitation = async (page: Page, link: string, email: string, role: string) => {
    await page.goto(link)
    await page.locator('#invitation-title').filter({ hasText: 'invites you to join Acme Widgets' }).waitFor()
    t.equal(page.url(), `${baseUrl}/invitations`, 'the token is taken out of the address bar')
    t.equal(await page.locator('#invitation-title').textContent(), 'Ada Lovelace invites you to join Acme Widgets', 'who invites, and to what')
    t.equal(await page.locator('[data-field=role]').textContent(), role)
    t.equal(await page.locator('[data-field=email]').textContent(), email, 'the invited address')
  }

  t.test('signed out, the invitee creates an account on the page, accepts, and is a member', async (t) => {
    const browser = await sharedChromium(root)
    const { page, violations } = await watchedPage(browser, t)
    const email = 'grace@example.com'
    const link = await invite(email, 'admin')
    await openInvitation(page, link, email, 'Administrator')
    t.ok(await page.locator('#login-form').isVisible(), 'signed out: the sign-in form')
    t.equal(await page.inputValue('#register-email'), email, 'the sign-up form has the invited address')
    await page.fill('#register-first-name', 'Grace')
    await page.fill('#register-last-name', 'Hopper')
    await page.fill('#register-username', 'grace')
    await page.fill('#register-password', 'compiler 1952 cobol')
    await page.click('#register-form button')
    await page.locator('#joined-title').filter({ hasText: 'You are a member of Acme Widgets' }).waitFor()
    t.equal(await focusedId(page, 'joined-title'), 'joined-title', 'the focus moves to the result')
    t.equal(await page.locator('#joined-text').textContent(), 'Your role: Administrator.')
    t.same(await membershipsOf(email, 'compiler 1952 cobol'), ['acme-widgets:admin'], 'GET /orgs lists the organisation with the invited role')

    await page.goto(link)
    await page.locator('#unusable-title').waitFor()
    t.match(await page.locator('#unusable-reason').textContent(), /accepted already/, 'a used link says so')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('signed in as another address, the page shows the mismatch, signs out, and the invitee signs in and accepts', async (t) => {
    const browser = await sharedChromium(root)
    const { page, violations } = await watchedPage(browser, t)
    const invitee = await registerAt(baseUrl)
    const other = await registerAt(baseUrl)
    const link = await invite(invitee.email, 'member')
    // Signed in to the console (its HttpOnly cookies) as the other account, then the link.
    await page.goto(`${baseUrl}/account`)
    await page.fill('#login-email', other.email)
    await page.fill('#login-password', other.password)
    await page.click('#login-form button[type=submit]')
    await page.locator('#signed-in-title').filter({ hasText: other.email }).waitFor()
    await openInvitation(page, link, invitee.email, 'Member')
    await page.locator('#mismatch-title').waitFor()
    t.equal(await page.locator('#mismatch-text').textContent(),
      `You are signed in as ${other.email}, but this invitation is for ${invitee.email}. Only that address can accept it.`)
    const refused = await call(baseUrl, 'POST', '/invitations/accept', { body: { token: link.split('#token=')[1] }, headers: await cookieOf(other.email, other.password) })
    t.equal(refused.body?.code, 'INVITATION_EMAIL_MISMATCH', 'the API refuses the other account too')

    await page.click('#sign-out')
    await page.locator('#login-title').waitFor()
    t.equal(await page.inputValue('#login-email'), invitee.email, 'the sign-in form has the invited address')
    await page.fill('#login-password', invitee.password)
    await page.click('#login-form button[type=submit]')
    await page.locator('#joined-title').filter({ hasText: 'You are a member of Acme Widgets' }).waitFor()
    t.same(await membershipsOf(invitee.email, invitee.password), ['acme-widgets:member'], 'the invitation stayed usable and made a member')
    t.same(await membershipsOf(other.email, other.password), [], 'the other account joined nothing')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })

  t.test('signed in to the console as the invited address, one button accepts', async (t) => {
    const browser = await sharedChromium(root)
    const { page, violations } = await watchedPage(browser, t)
    const invitee = await registerAt(baseUrl)
    const link = await invite(invitee.email, 'member')
    await page.goto(`${baseUrl}/account`)
    await page.fill('#login-email', invitee.email)
    await page.fill('#login-password', invitee.password)
    await page.click('#login-form button[type=submit]')
    await page.locator('#signed-in-title').filter({ hasText: invitee.email }).waitFor()
    await openInvitation(page, link, invitee.email, 'Member')
    await page.locator('#accept-title').waitFor()
    t.equal(await page.locator('[data-field=signed-in-as]').textContent(), invitee.email, 'who is signed in')
    t.ok(await page.locator('#login-form').isHidden(), 'no sign-in form')
    await page.click('#accept-button')
    await page.locator('#joined-title').filter({ hasText: 'You are a member of Acme Widgets' }).waitFor()
    const orgs = await page.evaluate(async () => (await fetch('/orgs')).json())
    t.same(orgs.orgs.map((entry: { slug: string, role: string }) => `${entry.slug}:${entry.role}`), ['acme-widgets:member'], 'GET /orgs in the same browser session lists it')
    t.same(await violations(), [], 'no CSP violation, no script error')
  })
})

import t from 'tap'
import { build } from '../fixtures/build.js'
import { sharedChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import { newUserBody } from '../fixtures/factories.js'
import { call, freePort } from '../fixtures/http.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'

// The invitation page of the header variant (variant A) in Chromium: the page keeps the tokens of its own
// sign-in in memory and sends them as headers. Signed in on the page as another address, it shows the
// mismatch and signs out; the invitee then signs in there with a mailed code ("Email me a code") and accepts.
// One service, one browser.
t.test('the invitation page in Chromium (header variant)', { skip: skipWithoutChromium }, async (t) => {
  const browser = await sharedChromium(t)
  const mailbox = await startMailbox(t)
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const server = await build(t, { variant: 'header', env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL: baseUrl } })
  await server.listen({ host: '127.0.0.1', port })

  const register = async () => {
    const body = newUserBody('header')
    if ((await call(baseUrl, 'POST', '/auth/register', { body })).status !== 201) throw new Error('register')
    return { email: body.email, password: body.password }
  }
  const bearerOf = async (email: string, password: string) =>
    ({ authorization: `Bearer ${(await call(baseUrl, 'POST', '/auth/login', { body: { email, password } })).body.accessToken}` })
  const owner = await register()
  const ownerBearer = await bearerOf(owner.email, owner.password)
  const org = await call(baseUrl, 'POST', '/orgs', { body: { name: 'Acme Widgets', slug: 'acme-widgets' }, headers: ownerBearer })
  t.equal(org.status, 201, 'the owner creates the organisation')
  const invitee = await register()
  const other = await register()
  t.equal((await call(baseUrl, 'POST', `/orgs/${org.body.id}/invitations`, { body: { email: invitee.email, role: 'member' }, headers: ownerBearer })).status, 201)
  const link = `${baseUrl}/invitations#token=${tokenFromLink(await mailbox.next(invitee.email, 'You are invited to join an organisation'), baseUrl, '/invitations')}`

  const { page, violations } = await watchedPage(browser, t)
  await page.goto(link)
  await page.locator('#invitation-title').filter({ hasText: 'Ada Lovelace invites you to join Acme Widgets' }).waitFor()
  t.equal(page.url(), `${baseUrl}/invitations`, 'the token is taken out of the address bar')
  t.ok(await page.locator('#register-username').count() === 0, 'the header variant\'s sign-up asks no username')
  await page.fill('#login-email', other.email)
  await page.fill('#login-password', other.password)
  await page.click('#login-form button[type=submit]')
  await page.locator('#mismatch-title').waitFor()
  t.equal(await page.locator('#mismatch-text').textContent(),
    `You are signed in as ${other.email}, but this invitation is for ${invitee.email}. Only that address can accept it.`, 'another address is told so')

  await page.click('#sign-out')
  await page.locator('#login-title').waitFor()
  t.equal(await page.inputValue('#login-email'), invitee.email, 'the sign-in form is back, with the invited address')
  // "Email me a code": the mailed sign-in code instead of the password.
  await page.click('#email-code-send')
  await page.locator('#email-code-title').waitFor()
  const code = /email_code=(\d{6})/.exec((await mailbox.next(invitee.email, 'Your sign-in code')).text ?? '')?.[1]
  t.ok(code, 'the sign-in code is mailed')
  await page.fill('#email-code', code ?? '')
  await page.click('#email-code-form button[type=submit]')
  await page.locator('#joined-title').filter({ hasText: 'You are a member of Acme Widgets' }).waitFor()
  t.equal(await page.locator('#joined-text').textContent(), 'Your role: Member.')
  const members = await call(baseUrl, 'GET', `/orgs/${org.body.id}/members`, { headers: ownerBearer })
  t.same(members.body.members.map((member: { email: string, role: string }) => `${member.email}:${member.role}`).sort(),
    [`${owner.email}:owner`, `${invitee.email}:member`].sort(), 'the owner sees the invitee among the members, with the invited role')
  t.same((await call(baseUrl, 'GET', '/orgs', { headers: await bearerOf(other.email, other.password) })).body.orgs, [], 'the other account joined nothing')
  t.equal(await page.evaluate(() => localStorage.length + sessionStorage.length), 0, 'the tokens stay in the page\'s memory, not in web storage')
  t.same(await violations(), [], 'no CSP violation, no script error')
})

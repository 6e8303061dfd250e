import t from 'tap'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { assertError } from '../fixtures/assertions.js'
import { cookieValue, credentials, logIn, loggedInUser, registerUser } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'

const PUBLIC_URL = 'http://localhost:8080/app'
const VERIFY = 'Verify your email address'

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: registration mails a verification link that verifies the email once`, async (t) => {
    const mailbox = await startMailbox(t)
    const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
    const session = await loggedInUser(server, variant)
    const account = async () => (await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })).json()

    const before = await account()
    t.equal(before.email_verified, false)
    const expected: Record<string, unknown> = { id: session.user.id, first_name: 'Ada', last_name: 'Lovelace', email: session.user.email, email_verified: false }
    if (variant === 'cookie') expected.username = session.user.body.username
    t.same(Object.keys(before).sort(), [...Object.keys(expected), 'created_at', 'mfa'].sort(), 'the user\'s own fields plus email_verified, created_at and mfa')
    t.match(before, expected)
    t.ok(Math.abs(Date.parse(before.created_at) - Date.now()) < 60_000, 'created_at is an ISO time of now')

    const mail = await mailbox.next(session.user.email, VERIFY)
    const token = tokenFromLink(mail, PUBLIC_URL, '/verify-email')
    const verify = await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token } })
    t.equal(verify.statusCode, 204)
    t.equal(verify.body, '')
    t.equal((await account()).email_verified, true)
    assertError(t, await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token } }), 400, 'INVALID_VERIFICATION_TOKEN')

    const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(variant, session) })
    t.notOk('email_verified' in read.json(), 'the seed\'s bodies keep their fields')
  })
}

t.test('a verification token expires after EMAIL_VERIFICATION_TTL; resend-verification mails a new one and voids the old', async (t) => {
  const mailbox = await startMailbox(t)
  const clock = testClock()
  const server = await build(t, { variant: 'header', env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL, EMAIL_VERIFICATION_TTL: '1s' }, clock })
  const session = await loggedInUser(server, 'header')
  const first = tokenFromLink(await mailbox.next(session.user.email, VERIFY), PUBLIC_URL, '/verify-email')
  clock.advance(1100)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: first } }), 400, 'VERIFICATION_TOKEN_EXPIRED')

  const resend = await server.inject({ method: 'POST', url: '/auth/resend-verification', ...credentials('header', session) })
  t.equal(resend.statusCode, 202)
  const second = tokenFromLink(await mailbox.next(session.user.email, VERIFY), PUBLIC_URL, '/verify-email')
  const resendAgain = await server.inject({ method: 'POST', url: '/auth/resend-verification', ...credentials('header', session) })
  t.equal(resendAgain.statusCode, 202)
  const third = tokenFromLink(await mailbox.next(session.user.email, VERIFY), PUBLIC_URL, '/verify-email')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: second } }), 400, 'INVALID_VERIFICATION_TOKEN')
  t.equal((await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: third } })).statusCode, 204)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/resend-verification' }), 401, 'MISSING_TOKEN')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: 'x'.repeat(300) } }), 400, 'VALIDATION_FAILED')
})

t.test('REQUIRE_EMAIL_VERIFICATION=true: login is 403 EMAIL_NOT_VERIFIED until the link is followed', async (t) => {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant: 'cookie', env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL, REQUIRE_EMAIL_VERIFICATION: 'true' } })
  const user = await registerUser(server, 'cookie')
  const login = () => server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  assertError(t, await login(), 403, 'EMAIL_NOT_VERIFIED')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'wrong password' } }), 401, 'INVALID_CREDENTIALS')
  const token = tokenFromLink(await mailbox.next(user.email, VERIFY), PUBLIC_URL, '/verify-email')
  t.equal((await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token } })).statusCode, 204)
  t.equal((await login()).statusCode, 200)
})

t.test('by default an unverified account logs in as the seed says', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  const user = await registerUser(server, 'cookie')
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200)
})

t.test('cookie variant: an email change makes the address unverified and mails the new one', async (t) => {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant: 'cookie', env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
  const session = await loggedInUser(server, 'cookie')
  const oldToken = tokenFromLink(await mailbox.next(session.user.email, VERIFY), PUBLIC_URL, '/verify-email')
  t.equal((await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: oldToken } })).statusCode, 204)
  let current = { accessToken: session.accessToken, refreshToken: session.refreshToken }
  const account = async () => (await server.inject({ method: 'GET', url: '/auth/account', ...credentials('cookie', current) })).json()
  t.equal((await account()).email_verified, true)

  // A change of name alone keeps the address verified.
  await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, ...credentials('cookie', session), payload: { first_name: 'Augusta' } })
  t.equal((await account()).email_verified, true)

  const patch = await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, ...credentials('cookie', session), payload: { email: 'countess@example.com' } })
  t.equal(patch.statusCode, 204)
  // The change ended every session; the answer carries the cookies of a new one.
  current = { accessToken: cookieValue(patch, 'accessToken'), refreshToken: cookieValue(patch, 'refreshToken') }
  t.match(await account(), { email: 'countess@example.com', email_verified: false })
  const token = tokenFromLink(await mailbox.next('countess@example.com', VERIFY), PUBLIC_URL, '/verify-email')
  t.equal((await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token } })).statusCode, 204)
  t.match(await account(), { email: 'countess@example.com', email_verified: true })
})

t.test('a link mailed to a previous address verifies nothing', async (t) => {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant: 'cookie', env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
  const user = await registerUser(server, 'cookie')
  const session = await logIn(server, 'cookie', user)
  await server.inject({ method: 'POST', url: '/auth/resend-verification', ...credentials('cookie', session) })
  await mailbox.next(user.email, VERIFY)
  const toOldAddress = tokenFromLink(await mailbox.next(user.email, VERIFY), PUBLIC_URL, '/verify-email')
  const patch = await server.inject({ method: 'PATCH', url: `/users/${user.id}`, ...credentials('cookie', session), payload: { email: 'elsewhere@example.com' } })
  assertError(t, await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: toOldAddress } }), 400, 'INVALID_VERIFICATION_TOKEN')
  const renewed = { accessToken: cookieValue(patch, 'accessToken'), refreshToken: cookieValue(patch, 'refreshToken') }
  t.equal((await server.inject({ method: 'GET', url: '/auth/account', ...credentials('cookie', renewed) })).json().email_verified, false)
})

import t, { type Test } from 'tap'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { assertError } from '../fixtures/assertions.js'
import { credentials, logIn, loggedInUser, registerUser } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'

const PUBLIC_URL = 'https://accounts.example.com'
const RESET = 'Reset your password'

async function setUp (t: Test, variant: 'header' | 'cookie', env: Record<string, string> = {}) {
  const mailbox = await startMailbox(t)
  const clock = testClock()
  const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL, ...env }, clock })
  return { mailbox, server, clock }
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: forgot and reset a password through the mailed link`, async (t) => {
    const { mailbox, server } = await setUp(t, variant)
    const first = await loggedInUser(server, variant)
    const second = await logIn(server, variant, first.user)

    const forgot = await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: first.user.email.toUpperCase() } })
    t.equal(forgot.statusCode, 202)
    const mail = await mailbox.next(first.user.email, RESET)
    t.equal(mail.subject, 'Reset your password')
    const token = tokenFromLink(mail, PUBLIC_URL, '/reset-password')
    t.ok(Buffer.from(token, 'base64url').length >= 32, 'at least 256 random bits')

    const reset = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'a brand new secret' } })
    t.equal(reset.statusCode, 204)
    t.equal(reset.body, '')

    assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: first.user.email, password: first.user.password } }), 401, 'INVALID_CREDENTIALS')
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: first.user.email, password: 'a brand new secret' } })
    t.equal(login.statusCode, 200, 'the new password logs in')

    for (const session of [first, second]) {
      const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) })
      assertError(t, refresh, 401, 'INVALID_REFRESH_TOKEN')
      const read = await server.inject({ method: 'GET', url: `/users/${first.user.id}`, ...credentials(variant, session) })
      assertError(t, read, 401, 'SESSION_REVOKED')
    }

    const again = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'yet another secret' } })
    assertError(t, again, 400, 'INVALID_RESET_TOKEN')
  })
}

t.test('a reset token expires after PASSWORD_RESET_TTL', async (t) => {
  const { mailbox, server, clock } = await setUp(t, 'cookie', { PASSWORD_RESET_TTL: '1s' })
  const user = await registerUser(server, 'cookie')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  const token = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  clock.advance(1100)
  const reset = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'a brand new secret' } })
  assertError(t, reset, 400, 'RESET_TOKEN_EXPIRED')
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  t.equal(login.statusCode, 200, 'the old password still holds')
})

t.test('a newer reset request leaves the older link live; using either voids the other', async (t) => {
  const { mailbox, server } = await setUp(t, 'cookie')
  const user = await registerUser(server, 'cookie')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  const older = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  const newer = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  t.equal((await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token: older, new_password: 'a brand new secret' } })).statusCode, 204)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token: newer, new_password: 'another new secret' } }), 400, 'INVALID_RESET_TOKEN')
})

t.test('reset-password refuses unknown tokens, short passwords and a verification token', async (t) => {
  const { mailbox, server } = await setUp(t, 'cookie')
  const user = await registerUser(server, 'cookie')
  const verificationToken = tokenFromLink(await mailbox.next(user.email), PUBLIC_URL, '/verify-email')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token: 'made-up', new_password: 'a brand new secret' } }), 400, 'INVALID_RESET_TOKEN')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token: verificationToken, new_password: 'a brand new secret' } }), 400, 'INVALID_RESET_TOKEN')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  const token = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'short' } }), 400, 'VALIDATION_FAILED')
  t.equal((await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'long enough now' } })).statusCode, 204, 'a refused password does not burn the link')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token } }), 400, 'VALIDATION_FAILED')
})

t.test('forgot-password: an unknown email is indistinguishable from a known one', async (t) => {
  const { mailbox, server } = await setUp(t, 'header')
  const user = await registerUser(server, 'header')
  await mailbox.next(user.email) // the verification mail of the registration
  const ask = (email: string) => server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email } })

  const known = await ask(user.email)
  const unknown = await ask('nobody@example.com')
  t.equal(known.statusCode, 202)
  t.equal(unknown.statusCode, 202)
  t.equal(known.body, unknown.body, 'the same body')
  t.same(Object.keys(known.headers).sort(), Object.keys(unknown.headers).sort(), 'the same headers')
  await mailbox.next(user.email, RESET)
  t.equal(mailbox.received.filter(mail => mail.to !== undefined && JSON.stringify(mail.to).includes('nobody@example.com')).length, 0, 'no mail to an unknown address')

  // Timing: alternate the two, compare medians. The bound is generous (noise of a shared machine);
  // what it catches is a lookup or a hash on one path only, which costs far more than it.
  const timings = { known: [] as number[], unknown: [] as number[] }
  for (let round = 0; round < 15; round++) {
    for (const [kind, email] of [['known', user.email], ['unknown', `nobody${round}@example.com`]] as const) {
      const started = process.hrtime.bigint()
      const response = await ask(email)
      timings[kind].push(Number(process.hrtime.bigint() - started) / 1e6)
      t.equal(response.statusCode, 202)
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
  const difference = Math.abs(median(timings.known) - median(timings.unknown))
  t.ok(difference < 25, `medians within 25 ms: known ${median(timings.known).toFixed(2)} ms, unknown ${median(timings.unknown).toFixed(2)} ms`)
})

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: change-password`, async (t) => {
    t.test('answers 204; other sessions are revoked at once, the current one keeps working', async (t) => {
      const { server } = await setUp(t, variant)
      const current = await loggedInUser(server, variant)
      const other = await logIn(server, variant, current.user)
      const change = await server.inject({
        method: 'POST',
        url: '/auth/change-password',
        ...credentials(variant, current),
        payload: { current_password: current.user.password, new_password: 'a brand new secret' }
      })
      t.equal(change.statusCode, 204)
      t.equal(change.body, '')

      assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, other) }), 401, 'INVALID_REFRESH_TOKEN')
      assertError(t, await server.inject({ method: 'GET', url: `/users/${current.user.id}`, ...credentials(variant, other) }), 401, 'SESSION_REVOKED')

      let session = current
      if (variant === 'cookie') {
        const cookies = Object.fromEntries((change.cookies as Array<{ name: string, value: string }>).map(cookie => [cookie.name, cookie.value]))
        t.ok(cookies.accessToken, 'a fresh access cookie')
        t.ok(cookies.refreshToken, 'a fresh refresh cookie')
        t.not(cookies.refreshToken, current.refreshToken)
        session = { ...current, accessToken: cookies.accessToken, refreshToken: cookies.refreshToken }
      }
      t.equal((await server.inject({ method: 'GET', url: `/users/${current.user.id}`, ...credentials(variant, session) })).statusCode, 200)
      t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) })).statusCode, 200)
      t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: current.user.email, password: 'a brand new secret' } })).statusCode, 200)
    })

    t.test('a wrong current password is 401 INVALID_CREDENTIALS and changes nothing', async (t) => {
      const { server } = await setUp(t, variant)
      const session = await loggedInUser(server, variant)
      const other = await logIn(server, variant, session.user)
      const change = await server.inject({ method: 'POST', url: '/auth/change-password', ...credentials(variant, session), payload: { current_password: 'not my password', new_password: 'a brand new secret' } })
      assertError(t, change, 401, 'INVALID_CREDENTIALS')
      t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, other) })).statusCode, 200, 'other sessions live on')
      t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })).statusCode, 200)
    })

    t.test('needs an access token and a valid new password', async (t) => {
      const { server } = await setUp(t, variant)
      const session = await loggedInUser(server, variant)
      const payload = { current_password: session.user.password, new_password: 'a brand new secret' }
      assertError(t, await server.inject({ method: 'POST', url: '/auth/change-password', payload }), 401, 'MISSING_TOKEN')
      for (const body of [{ ...payload, new_password: 'short' }, { ...payload, new_password: 'x'.repeat(257) }, { current_password: session.user.password }, { ...payload, extra: 1 }]) {
        assertError(t, await server.inject({ method: 'POST', url: '/auth/change-password', ...credentials(variant, session), payload: body }), 400, 'VALIDATION_FAILED')
      }
    })
  })
}

t.test('change-password: wrong current passwords count as failed logins (the account locks after RATE_LIMIT_LOGIN_FAILURES)', async (t) => {
  const { server } = await setUp(t, 'header', { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '2' })
  const session = await loggedInUser(server, 'header')
  const change = (currentPassword: string) => server.inject({
    method: 'POST', url: '/auth/change-password', ...credentials('header', session), payload: { current_password: currentPassword, new_password: 'a brand new secret' }
  })
  assertError(t, await change('guess one'), 401, 'INVALID_CREDENTIALS')
  assertError(t, await change('guess two'), 401, 'INVALID_CREDENTIALS')
  const limited = await change(session.user.password)
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) > 0)
})

t.test('cookie variant: change-password with only the access cookie renews the access cookie', async (t) => {
  const { server } = await setUp(t, 'cookie')
  const session = await loggedInUser(server, 'cookie')
  const change = await server.inject({
    method: 'POST', url: '/auth/change-password', cookies: { accessToken: session.accessToken }, payload: { current_password: session.user.password, new_password: 'a brand new secret' }
  })
  t.equal(change.statusCode, 204)
  const names = (change.cookies as Array<{ name: string }>).map(cookie => cookie.name)
  t.same(names, ['accessToken'])
  t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })).statusCode, 200, 'the current session lives on')
})

import t, { type Test } from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Variant } from '../../../core/config.js'
import { EMAIL_CODE_MAX_ATTEMPTS, EMAIL_CODE_TTL_SECONDS, EMAIL_CODE_WORK_DELAY_MIN_MS } from '../../../core/email-codes/email-codes.js'
import { EMAIL_CODE_ANSWER } from '../../../routes/auth/email-code.js'
import { assertError } from '../../fixtures/assertions.js'
import { build } from '../../fixtures/build.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { cookieValue, credentials, logIn, newUserBody, registerUser, type Session } from '../../fixtures/factories.js'
import { startMailbox, tokenFromLink, type Mailbox } from '../../fixtures/mailbox.js'
import { codeAt, enableTotp, verify } from '../../fixtures/mfa.js'

/*
 * Sign in without a password (issue 36): POST /auth/email-code mails a six-digit code, POST /auth/email-code/verify
 * answers as a login does. One app per variant serves most tests (each on addresses of its own).
 */

const PUBLIC_URL = 'https://accounts.example.com'
const SUBJECT = 'Your sign-in code'
const ELEVEN_MINUTES = 11 * 60_000

interface App {
  server: FastifyInstance
  mailbox: Mailbox
  clock: TestClock
  variant: Variant
}

async function setUp (t: Test, variant: Variant, env: Record<string, string> = {}): Promise<App> {
  const mailbox = await startMailbox(t)
  const clock = testClock()
  const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL, ...env }, clock })
  return { server, mailbox, clock, variant }
}

let addresses = 0
const newAddress = () => `someone${++addresses}.${process.pid}@example.com`

const ask = async ({ server }: App, email: string) => await server.inject({ method: 'POST', url: '/auth/email-code', payload: { email } })

/** The code mailed to `email` (the next mail not read yet), checked against its link. */
async function mailedCode (t: Test, { mailbox }: App, email: string): Promise<string> {
  const mail = await mailbox.next(email, SUBJECT)
  const link = /(https:\/\/\S+\/account#email_code=(\d{6})&email=(\S+))/.exec(mail.text ?? '')
  if (link === null) throw new Error(`no sign-in link in: ${mail.text}`)
  t.ok(link[1].startsWith(`${PUBLIC_URL}/account#`), 'the link leads to the sign-in page, the code in its fragment')
  t.equal(decodeURIComponent(link[3]), email, 'with the address')
  t.match(mail.text, new RegExp(`\\b${link[2]}\\b[\\s\\S]*${link[2]}`), 'the code in the text, to type, and in the link')
  return link[2]
}

async function codeFor (t: Test, app: App, email: string): Promise<string> {
  t.equal((await ask(app, email)).statusCode, 202)
  return await mailedCode(t, app, email)
}

/** A user whose address is verified (the registration's link followed): a code sign-in claims nothing from it. */
async function verifiedUser (t: Test, { server, mailbox, variant }: App): Promise<Session['user']> {
  const user = await registerUser(server, variant)
  const token = tokenFromLink(await mailbox.next(user.email, 'Verify your email address'), PUBLIC_URL, '/verify-email')
  t.equal((await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token } })).statusCode, 204, 'address verified')
  return user
}

const check = async ({ server }: App, payload: Record<string, string>) => await server.inject({ method: 'POST', url: '/auth/email-code/verify', payload })

/** A login answer as the variant gives it: the session it holds. */
function sessionOf (t: Test, variant: Variant, response: LightMyRequestResponse, user: Session['user']): Session {
  const body = response.json()
  if (variant === 'header') {
    t.same(Object.keys(body).sort(), ['accessToken', 'refreshToken', 'user'], 'the header variant\'s login body')
    t.notOk(response.headers['set-cookie'], 'no cookie')
    return { user, accessToken: body.accessToken, refreshToken: body.refreshToken, response }
  }
  t.same(Object.keys(body).sort(), ['accessToken', 'user'], 'the cookie variant\'s login body')
  t.equal(cookieValue(response, 'accessToken'), body.accessToken, 'and its cookies')
  return { user, accessToken: body.accessToken, refreshToken: cookieValue(response, 'refreshToken'), response }
}

/** The user's security events as the store keeps them (with their detail, which the API does not show), newest first. */
async function eventsOf ({ server }: App, session: Session): Promise<Array<{ type: string, detail: Record<string, unknown> | null }>> {
  return await server.securityEvents.list(session.user.id, { limit: 50 })
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant`, async (t) => {
    const app = await setUp(t, variant)
    const { server, clock } = app

    t.test('a known address signs in with its code, as /auth/login answers; the code works once', async (t) => {
      const user = await registerUser(server, variant)
      const code = await codeFor(t, app, user.email)
      const signIn = await check(app, { email: user.email, code })
      t.equal(signIn.statusCode, 200)
      const session = sessionOf(t, variant, signIn, user)
      t.same(Object.keys(signIn.json().user).sort(), variant === 'cookie'
        ? ['email', 'first_name', 'id', 'last_name', 'username']
        : ['email', 'first_name', 'id', 'last_name'], 'the user as the variant shows it')
      t.equal(signIn.json().user.id, user.id)
      t.equal((await server.inject({ method: 'GET', url: `/users/${user.id}`, ...credentials(variant, session) })).statusCode, 200, 'the tokens work')
      const login1 = (await eventsOf(app, session)).find(event => event.type === 'login')
      t.match(login1, { detail: { method: 'email_code' } }, 'the sign-in is a security event, with its method')
      assertError(t, await check(app, { email: user.email, code }), 401, 'INVALID_CODE')
      const account = await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })
      t.equal(account.json().email_verified, true, 'the code proved the address')
    })

    t.test('known and unknown addresses get the same answer, and the request does the same work for both', async (t) => {
      const known = await registerUser(server, variant)
      const unknown = newAddress()
      const calls: string[] = []
      const { store } = server
      const findUserByEmail = store.findUserByEmail.bind(store)
      const issueEmailCode = store.issueEmailCode.bind(store)
      store.findUserByEmail = async (email) => { calls.push('lookup'); return await findUserByEmail(email) }
      store.issueEmailCode = async (...args) => { calls.push('issue'); return await issueEmailCode(...args) }
      const delays: number[] = []
      const send = server.mailer.send.bind(server.mailer)
      server.mailer.send = (job, options) => { delays.push(options?.delayMs ?? 0); send(job, options) }
      t.teardown(() => { Object.assign(store, { findUserByEmail, issueEmailCode }); server.mailer.send = send })

      const answers: LightMyRequestResponse[] = []
      const work: string[][] = []
      for (const email of [known.email, unknown]) {
        calls.length = 0
        delays.length = 0
        const answer = await ask(app, email)
        answers.push(answer)
        t.same(calls, [], `${email}: nothing is looked up or written before the answer`)
        t.equal(delays.length, 1, 'one job')
        t.ok(delays[0] >= EMAIL_CODE_WORK_DELAY_MIN_MS, `it starts ${EMAIL_CODE_WORK_DELAY_MIN_MS} ms after the answer or later`)
        await server.mailer.idle()
        work.push([...calls])
      }
      const [first, second] = answers
      t.equal(first.statusCode, 202)
      t.equal(second.statusCode, 202)
      t.same(first.json(), EMAIL_CODE_ANSWER)
      t.equal(first.body, second.body, 'the same body')
      t.same(Object.keys(first.headers).sort(), Object.keys(second.headers).sort(), 'the same headers')
      t.same(work[0], work[1], 'the same job for both (EMAIL_CODE_SIGNUP on: a code for each)')
      await mailedCode(t, app, known.email)
      await mailedCode(t, app, unknown)
    })

    t.test('only the newest code works', async (t) => {
      const user = await registerUser(server, variant)
      const older = await codeFor(t, app, user.email)
      const newer = await codeFor(t, app, user.email)
      if (older !== newer) assertError(t, await check(app, { email: user.email, code: older }), 401, 'INVALID_CODE')
      t.equal((await check(app, { email: user.email, code: newer })).statusCode, 200)
    })

    t.test('a code expires after 10 minutes', async (t) => {
      const user = await registerUser(server, variant)
      const code = await codeFor(t, app, user.email)
      clock.advance(EMAIL_CODE_TTL_SECONDS * 1000 + 1000)
      assertError(t, await check(app, { email: user.email, code }), 401, 'INVALID_CODE')
    })

    t.test('the fifth wrong code burns it: the right one is refused after', async (t) => {
      const user = await registerUser(server, variant)
      const code = await codeFor(t, app, user.email)
      const wrong = (n: number) => String((Number(code) + n) % 1_000_000).padStart(6, '0')
      for (let n = 1; n <= EMAIL_CODE_MAX_ATTEMPTS; n++) assertError(t, await check(app, { email: user.email, code: wrong(n) }), 401, 'INVALID_CODE')
      assertError(t, await check(app, { email: user.email, code }), 401, 'INVALID_CODE')
      const fresh = await codeFor(t, app, user.email)
      t.equal((await check(app, { email: user.email, code: fresh })).statusCode, 200, 'a new code works')
    })

    t.test('concurrent wrong guesses burn it all the same: no burst gets past five', async (t) => {
      const user = await registerUser(server, variant)
      const code = await codeFor(t, app, user.email)
      const guesses = Array.from({ length: 12 }, (_, n) => String((Number(code) + n + 1) % 1_000_000).padStart(6, '0'))
      const answers = await Promise.all(guesses.map(guess => check(app, { email: user.email, code: guess })))
      t.same(answers.map(answer => answer.statusCode), guesses.map(() => 401))
      assertError(t, await check(app, { email: user.email, code }), 401, 'INVALID_CODE')
    })

    t.test('one code, two requests at once: one signs in, the other is INVALID_CODE; one sign-up makes one account', async (t) => {
      const user = await verifiedUser(t, app)
      const code = await codeFor(t, app, user.email)
      const both = await Promise.all([check(app, { email: user.email, code }), check(app, { email: user.email, code })])
      t.same(both.map(answer => answer.statusCode).sort(), [200, 401])

      const email = newAddress()
      const signUpCode = await codeFor(t, app, email)
      const fields = (n: number): Record<string, string> => ({ first_name: 'Ada', last_name: 'Lovelace', ...(variant === 'cookie' ? { username: `racer_${addresses}_${n}` } : {}) })
      const signUps = await Promise.all([check(app, { email, code: signUpCode, ...fields(1) }), check(app, { email, code: signUpCode, ...fields(2) })])
      // One request signs in: the one that made the account (201), or, when the other made it and this one spent the code
      // first, a sign-in to that account (200; the maker then answers 401, and its account stays: core/accounts/email-code-sign-in.ts).
      const signedIn = signUps.filter(answer => answer.statusCode === 200 || answer.statusCode === 201)
      const refused = signUps.filter(answer => answer.statusCode !== 200 && answer.statusCode !== 201)
      t.equal(signedIn.length, 1, `one request signs in (${signUps.map(answer => answer.statusCode).join(', ')})`)
      t.ok(refused.length === 1 && [401, 409].includes(refused[0].statusCode), 'the other refused: the code or the address was taken first')
      t.equal(await server.store.findUserByEmail(email).then(found => found?.id), signedIn[0]?.json().user.id, 'one account, the one signed in to')
    })

    t.test('the squatter rule: a never-verified account registered by someone else loses its password and sessions', async (t) => {
      // The squatter registers the owner's address with a password of its own and keeps a session.
      const squatter = await registerUser(server, variant)
      const squatterSession = await logIn(server, variant, squatter)
      const code = await codeFor(t, app, squatter.email)
      const owner = await check(app, { email: squatter.email, code })
      t.equal(owner.statusCode, 200)
      const ownerSession = sessionOf(t, variant, owner, squatter)
      assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: squatter.email, password: squatter.password } }), 401, 'INVALID_CREDENTIALS')
      assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, squatterSession) }), 401, 'INVALID_REFRESH_TOKEN')
      assertError(t, await server.inject({ method: 'GET', url: `/users/${squatter.id}`, ...credentials(variant, squatterSession) }), 401, 'SESSION_REVOKED')
      t.equal((await server.inject({ method: 'GET', url: `/users/${squatter.id}`, ...credentials(variant, ownerSession) })).statusCode, 200, 'the owner\'s session lives')
    })

    t.test('a verified account keeps its password after a code sign-in', async (t) => {
      const user = await verifiedUser(t, app)
      t.equal((await check(app, { email: user.email, code: await codeFor(t, app, user.email) })).statusCode, 200)
      t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200)
    })

    t.test('sign-up without a password, then setting one', async (t) => {
      const email = newAddress()
      const code = await codeFor(t, app, email)
      const fields = newUserBody(variant)
      const missing = await check(app, { email, code })
      assertError(t, missing, 400, 'VALIDATION_FAILED')
      t.match(missing.json().message, variant === 'cookie' ? /first_name, last_name, username/ : /first_name, last_name$/, 'the missing fields named')
      assertError(t, await check(app, { email, code, first_name: 'Ada', last_name: 'Lovelace', ...(variant === 'cookie' ? { username: fields.username } : {}), password: 'a password here' }), 400, 'VALIDATION_FAILED')

      const registration: Record<string, string> = variant === 'cookie'
        ? { first_name: 'Ada', last_name: 'Lovelace', username: fields.username }
        : { first_name: 'Ada', last_name: 'Lovelace' }
      const created = await check(app, { email, code, ...registration })
      t.equal(created.statusCode, 201, 'the code was not spent by the 400s')
      const user = { id: created.json().user.id, email, password: '', body: {} }
      const session = sessionOf(t, variant, created, user)
      t.match(created.json().user, { email, first_name: 'Ada', last_name: 'Lovelace', ...(variant === 'cookie' ? { username: fields.username } : {}) })
      const account = (await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })).json()
      t.equal(account.email_verified, true)
      // No password yet: a password login fails as a wrong password does.
      assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email, password: 'analytical engine 1843' } }), 401, 'INVALID_CREDENTIALS')

      assertError(t, await server.inject({ method: 'POST', url: '/auth/password', ...credentials(variant, session), payload: { password: 'password123' } }), 400, 'PASSWORD_TOO_COMMON')
      const set = await server.inject({ method: 'POST', url: '/auth/password', ...credentials(variant, session), payload: { password: 'my first password 36' } })
      t.equal(set.statusCode, 204, set.body)
      t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email, password: 'my first password 36' } })).statusCode, 200, 'the password signs in now')
      const again = await server.inject({ method: 'POST', url: '/auth/password', ...credentials(variant, session), payload: { password: 'another password 36' } })
      assertError(t, again, 409, 'PASSWORD_ALREADY_SET')
    })

    t.test('setting the first password needs a fresh session', async (t) => {
      const email = newAddress()
      const body = newUserBody(variant)
      const created = await check(app, { email, code: await codeFor(t, app, email), first_name: 'Ada', last_name: 'Lovelace', ...(variant === 'cookie' ? { username: body.username } : {}) })
      const session = sessionOf(t, variant, created, { id: created.json().user.id, email, password: '', body: {} })
      clock.advance(ELEVEN_MINUTES)
      assertError(t, await server.inject({ method: 'POST', url: '/auth/password', ...credentials(variant, session), payload: { password: 'my first password 36' } }), 403, 'REAUTHENTICATION_REQUIRED')
    })

    t.test('a password-free account re-authenticates with a mailed code and deletes itself', async (t) => {
      const email = newAddress()
      const body = newUserBody(variant)
      const created = await check(app, { email, code: await codeFor(t, app, email), first_name: 'Ada', last_name: 'Lovelace', ...(variant === 'cookie' ? { username: body.username } : {}) })
      const id = created.json().user.id
      const session = sessionOf(t, variant, created, { id, email, password: '', body: {} })
      clock.advance(ELEVEN_MINUTES)
      const remove = () => server.inject({ method: 'DELETE', url: `/users/${id}`, ...credentials(variant, session), payload: {} })
      assertError(t, await remove(), 403, 'REAUTHENTICATION_REQUIRED')

      const code = await codeFor(t, app, email)
      assertError(t, await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload: { email_code: code === '000000' ? '000001' : '000000' } }), 401, 'INVALID_CODE')
      assertError(t, await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload: {} }), 400, 'VALIDATION_FAILED')
      const reauth = await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload: { email_code: code } })
      t.equal(reauth.statusCode, 204, reauth.body)
      t.equal((await remove()).statusCode, 204, 'deleted')
      assertError(t, await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload: { email_code: code } }), 404, 'USER_NOT_FOUND')
    })
  })
}

for (const variant of ['header', 'cookie'] as const) {
  // On the real clock: the authenticator's codes are the real time's.
  t.test(`${variant} variant, with TOTP`, async (t) => {
    const mailbox = await startMailbox(t)
    const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
    const app: App = { server, mailbox, clock: testClock(), variant }

    t.test('with TOTP a code is the first step: 403 MFA_REQUIRED, then the TOTP code signs in', async (t) => {
      const user = await verifiedUser(t, app)
      const totp = await enableTotp(server, variant, await logIn(server, variant, user))
      const code = await codeFor(t, app, user.email)
      const first = await check(app, { email: user.email, code })
      t.equal(first.statusCode, 403)
      t.equal(first.json().code, 'MFA_REQUIRED')
      t.notOk(first.headers['set-cookie'], 'no session yet')
      const second = await verify(server, first.json().mfa_token, codeAt(totp.secret, 1))
      t.equal(second.statusCode, 200, second.body)
      const session = sessionOf(t, variant, second, user)
      const login = (await eventsOf(app, session)).find(event => event.type === 'login')
      t.match(login, { detail: { method: 'email_code+totp' } }, 'recorded with the code as its first factor')
    })

    t.test('an account with a password re-authenticates with a mailed code too (and with TOTP, its code as well)', async (t) => {
      const user = await verifiedUser(t, app)
      const session = await logIn(server, variant, user)
      const totp = await enableTotp(server, variant, session)
      const reauthenticate = (payload: Record<string, string>) => server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload })
      const code = await codeFor(t, app, user.email)
      assertError(t, await reauthenticate({ email_code: code }), 403, 'MFA_REQUIRED')
      t.equal((await reauthenticate({ email_code: code, code: codeAt(totp.secret, 1) })).statusCode, 204, 'the code was kept for the second try')
      const events = await eventsOf(app, session)
      t.match(events.find(event => event.type === 'reauthenticated'), { detail: { method: 'email_code+totp' } })
      assertError(t, await reauthenticate({ email_code: code, code: codeAt(totp.secret, 2) }), 401, 'INVALID_CODE')
    })
  })
}

t.test('limits per address and per client address, wrong codes counted', async (t) => {
  const app = await setUp(t, 'header', { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_RECOVERY_ACCOUNT_MAX: '3', RATE_LIMIT_RECOVERY_MAX: '6' })
  const user = await registerUser(app.server, 'header')
  t.equal((await ask(app, user.email)).statusCode, 202)
  assertError(t, await check(app, { email: user.email, code: '000000' }), 401, 'INVALID_CODE')
  t.equal((await ask(app, user.email)).statusCode, 202)
  const limited = await ask(app, user.email)
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  assertError(t, await check(app, { email: user.email, code: '000000' }), 429, 'RATE_LIMITED')
  const unknown = newAddress()
  for (let n = 0; n < 3; n++) await ask(app, unknown)
  assertError(t, await ask(app, unknown), 429, 'RATE_LIMITED')
  // Six requests from this client address so far (three each), counted per address too.
  assertError(t, await ask(app, newAddress()), 429, 'RATE_LIMITED')
})

t.test('EMAIL_CODE_LOGIN=false: both routes are 404', async (t) => {
  const app = await setUp(t, 'cookie', { EMAIL_CODE_LOGIN: 'false' })
  assertError(t, await ask(app, newAddress()), 404, 'NOT_FOUND')
  assertError(t, await check(app, { email: newAddress(), code: '123456' }), 404, 'NOT_FOUND')
})

t.test('EMAIL_CODE_SIGNUP=false: an unknown address is mailed nothing, a known one its code', async (t) => {
  const app = await setUp(t, 'cookie', { EMAIL_CODE_SIGNUP: 'false' })
  const user = await registerUser(app.server, 'cookie')
  const unknown = newAddress()
  const answers = [await ask(app, unknown), await ask(app, user.email)]
  t.same(answers.map(answer => answer.statusCode), [202, 202])
  t.equal(answers[0].body, answers[1].body, 'the same answer')
  const code = await mailedCode(t, app, user.email)
  await app.server.mailer.idle()
  t.equal(app.mailbox.received.filter(mail => JSON.stringify(mail.to).includes(unknown)).length, 0, 'no mail to the unknown address')

  // The account goes while its code lives: the code proves the address, but makes no account.
  const session = await logIn(app.server, 'cookie', user)
  t.equal((await app.server.inject({ method: 'DELETE', url: `/users/${user.id}`, ...credentials('cookie', session), payload: { password: user.password } })).statusCode, 204)
  assertError(t, await check(app, { email: user.email, code, first_name: 'Ada', last_name: 'Lovelace', username: 'ada_again' }), 401, 'INVALID_CODE')
})

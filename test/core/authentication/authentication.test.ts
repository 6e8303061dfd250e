import t, { type Test } from 'tap'
import { createAuthentication, type AuthenticationDependencies } from '../../../core/authentication/authentication.js'
import { loadConfig } from '../../../core/config.js'
import type { Client, EventSubject, SecurityEventType } from '../../../core/events/security-events.js'
import { createEmailCodes } from '../../../core/email-codes/email-codes.js'
import type { MailJob, MailMessage } from '../../../core/mail/mailer.js'
import { createLoginThrottle } from '../../../core/lockout/login-throttle.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import type { Mfa, MfaVerdict } from '../../../core/mfa/mfa.js'
import type { Passwords } from '../../../core/passwords/passwords.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

const client: Client = { ip: '192.0.2.1', userAgent: 'test', requestId: null }
const PASSWORD = 'correct horse battery staple'
// Two failures lock the account for 30 s.
const { rateLimit } = loadConfig({ NODE_ENV: 'test', DATABASE_URL: ':memory:', RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '2', RATE_LIMIT_LOCKOUT: '30s' })

/** Hashes that are the password behind a marker of the parameters they were made with: fast, and enough to tell a rehash. */
function fakePasswords () {
  const parameters = 'current'
  const calls = { verifyNothing: 0 }
  const passwords: Passwords = {
    hash: async (password) => `${parameters}:${password}`,
    verify: async (passwordHash, password) => passwordHash.slice(passwordHash.indexOf(':') + 1) === password,
    async verifyNothing () {
      calls.verifyNothing++
      return false
    },
    needsRehash: (passwordHash) => !passwordHash.startsWith(`${parameters}:`)
  }
  return { passwords, calls }
}

/** A second factor whose right code is '123456' and whose mfa_tokens are 'mfa-<userId>'. */
function fakeMfa (usersWithTotp: Set<number>): AuthenticationDependencies['mfa'] {
  const verdict = (code: string): MfaVerdict => code === '123456'
    ? { outcome: 'passed', userId: 0, method: 'totp' }
    : { outcome: 'refused', userId: 0, failures: 1, method: 'totp' }
  const mfa: Pick<Mfa, 'isRequired' | 'challenge' | 'openChallenge' | 'attempt' | 'confirmCode' | 'firstStepOf'> = {
    isRequired: async (userId) => usersWithTotp.has(userId),
    challenge: async (userId) => `mfa-${userId}`,
    firstStepOf: () => undefined,
    async openChallenge (mfaToken) {
      const userId = Number(mfaToken.slice('mfa-'.length))
      return { tokenHash: mfaToken, userId, createdAt: new Date(), expiresAt: new Date(), failures: 0, usedAt: null }
    },
    attempt: async (_mfaToken, _user, code) => verdict(code),
    confirmCode: async (_user, code) => verdict(code)
  }
  return mfa
}

interface SetUpOptions {
  requireEmailVerification?: boolean
  log?: Logger
  /** Changes to the fake passwords service. */
  passwords?: Partial<Passwords>
}

async function setUp (t: Test, { requireEmailVerification = false, log = silentLogger, passwords: changes = {} }: SetUpOptions = {}) {
  const store = await testStore(t)
  const clock = testClock()
  const fake = fakePasswords()
  const passwords = { ...fake.passwords, ...changes }
  const { calls } = fake
  const events: Array<{ type: SecurityEventType, subject: EventSubject }> = []
  const started: number[] = []
  const marked: string[] = []
  const usersWithTotp = new Set<number>()
  // The mailed codes' jobs, run when the test awaits them; their mails, as the outbox would get them.
  const mails: MailMessage[] = []
  const jobs: Array<Promise<unknown>> = []
  const mailed = {
    send (job: MailJob) { jobs.push(typeof job === 'function' ? job() : Promise.resolve(mails.push(job))) },
    forOutbox (message: MailMessage) { mails.push(message); return message }
  }
  const emailCodes = createEmailCodes({ store, clock, mailer: mailed, log: silentLogger }, { publicUrl: 'https://accounts.example.com' })
  const authentication = createAuthentication({
    store,
    passwords,
    loginThrottle: createLoginThrottle({ clock, log: silentLogger }, { rateLimit }),
    sessions: {
      async start (userId) {
        started.push(userId)
        return { userId, sessionId: `session-${started.length}`, accessToken: 'access', refreshToken: 'refresh', refreshTokenMaxAge: 60 }
      },
      async markAuthenticated (sessionId) { marked.push(sessionId) }
    },
    securityEvents: { async record (type, _client, subject) { events.push({ type, subject }) } },
    mfa: fakeMfa(usersWithTotp),
    emailCodes,
    log
  }, { requireEmailVerification })
  const user = await store.createUser({ firstName: 'A', lastName: 'B', username: null, email: 'owner@example.com', passwordHash: `old:${PASSWORD}` })
  const mailedCode = async () => {
    await Promise.all(jobs.splice(0))
    return /\b(\d{6})\b/.exec(mails.at(-1)?.text ?? '')?.[1] ?? ''
  }
  return { store, clock, authentication, events, started, marked, usersWithTotp, calls, user, mailedCode, emailCodes }
}

const eventTypes = (events: Array<{ type: SecurityEventType }>) => events.map(event => event.type)

t.test('the right password starts a session; a wrong one and an unknown email both answer INVALID_CREDENTIALS', async (t) => {
  const { authentication, events, started, calls, user } = await setUp(t)
  const { session } = await authentication.logIn(user.email, PASSWORD, client)
  t.equal(session.userId, user.id)
  t.same(started, [user.id])
  t.same(events.at(-1), { type: 'login', subject: { userId: user.id, sessionId: session.sessionId, detail: { method: 'password' } } })

  await t.rejects(authentication.logIn(user.email, 'a guess', client), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(authentication.logIn('nobody@example.com', PASSWORD, client), { code: 'INVALID_CREDENTIALS' })
  t.equal(calls.verifyNothing, 1, 'the unknown email spent a verification')
  t.same(events.slice(1), [
    { type: 'login_failed', subject: { userId: user.id } },
    { type: 'login_failed', subject: { userId: null } }
  ])
})

t.test('wrong passwords lock the account, the right one included, until the lockout has passed', async (t) => {
  const { authentication, clock, events, user } = await setUp(t)
  await t.rejects(authentication.logIn(user.email, 'guess 1', client), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(authentication.logIn(user.email, 'guess 2', client), { code: 'INVALID_CREDENTIALS' })
  t.same(eventTypes(events), ['login_failed', 'login_failed', 'account_locked'])
  await t.rejects(authentication.logIn(user.email, PASSWORD, client), { code: 'RATE_LIMITED' })
  clock.advance(30_000)
  await t.resolves(authentication.logIn(user.email, PASSWORD, client))
  await t.rejects(authentication.logIn(user.email, 'guess 3', client), { code: 'INVALID_CREDENTIALS' })
  await t.resolves(authentication.logIn(user.email, PASSWORD, client), 'the right password had cleared the count')
})

t.test('a password check the hashing queue refused (503 BUSY) is not a failed login', async (t) => {
  const busy = Object.assign(new Error('busy'), { code: 'BUSY' })
  const { authentication, user } = await setUp(t, { passwords: { verify: async () => { throw busy } } })
  for (let attempt = 0; attempt < 3; attempt++) await t.rejects(authentication.logIn(user.email, PASSWORD, client), { code: 'BUSY' }, 'never RATE_LIMITED')
})

t.test('a password hashed with older parameters is rehashed at login; a failed rehash is logged and the login goes on', async (t) => {
  const { authentication, store, user } = await setUp(t)
  await authentication.logIn(user.email, PASSWORD, client)
  t.equal((await store.findUserById(user.id))?.passwordHash, `current:${PASSWORD}`)

  const warnings: string[] = []
  const log: Logger = { ...silentLogger, warn: (_object: object | string, message?: string) => { warnings.push(message ?? '') } }
  const broken = await setUp(t, { log })
  broken.store.updateUser = async () => { throw new Error('store down') }
  await t.resolves(broken.authentication.logIn(broken.user.email, PASSWORD, client))
  t.same(warnings, ['password rehash failed; retried at the next login'])
})

t.test('with REQUIRE_EMAIL_VERIFICATION an unverified account is refused only after its password matched', async (t) => {
  const { authentication, started, user } = await setUp(t, { requireEmailVerification: true })
  await t.rejects(authentication.logIn(user.email, 'a guess', client), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(authentication.logIn(user.email, PASSWORD, client), { code: 'EMAIL_NOT_VERIFIED' })
  t.same(started, [])
})

t.test('an account with TOTP: the password leads to the code, a wrong code counts as a failed login, the right one starts the session', async (t) => {
  const { authentication, events, started, usersWithTotp, user } = await setUp(t)
  usersWithTotp.add(user.id)
  await t.rejects(authentication.logIn(user.email, PASSWORD, client), { code: 'MFA_REQUIRED', bodyFields: { mfa_token: `mfa-${user.id}` } })
  t.same(started, [], 'no session on the password alone')

  await t.rejects(authentication.completeMfaLogin(`mfa-${user.id}`, '000000', client), { code: 'INVALID_MFA_CODE' })
  t.same(eventTypes(events), ['mfa_failed'])
  const { session } = await authentication.completeMfaLogin(`mfa-${user.id}`, '123456', client)
  t.same(started, [user.id])
  t.same(events.at(-1), { type: 'login', subject: { userId: user.id, sessionId: session.sessionId, detail: { method: 'password+totp' } } })

  // A stranger's wrong password stays counted through the owner's right one (only a code clears it): one wrong code then locks.
  await t.rejects(authentication.logIn(user.email, 'a stranger guesses', client), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(authentication.logIn(user.email, PASSWORD, client), { code: 'MFA_REQUIRED' })
  await t.rejects(authentication.completeMfaLogin(`mfa-${user.id}`, '000001', client), { code: 'INVALID_MFA_CODE' })
  t.same(eventTypes(events).slice(-3), ['login_failed', 'mfa_failed', 'account_locked'], 'the password\'s own attempt was given back, not counted')
  await t.rejects(authentication.completeMfaLogin(`mfa-${user.id}`, '123456', client), { code: 'RATE_LIMITED' })
})

t.test('re-authentication needs the password, and on an account with TOTP a code too; a wrong password counts', async (t) => {
  const { authentication, events, marked, usersWithTotp, user } = await setUp(t)
  await authentication.reauthenticate(user, { password: PASSWORD }, client, 'session-a')
  t.same(marked, ['session-a'])
  t.same(events.at(-1), { type: 'reauthenticated', subject: { userId: user.id, sessionId: 'session-a', detail: { method: 'password' } } })

  usersWithTotp.add(user.id)
  await t.rejects(authentication.reauthenticate(user, { password: PASSWORD }, client, 'session-b'), { code: 'MFA_REQUIRED' })
  await t.rejects(authentication.reauthenticate(user, { password: PASSWORD, code: '000000' }, client, 'session-b'), { code: 'INVALID_MFA_CODE' })
  await authentication.reauthenticate(user, { password: PASSWORD, code: '123456' }, client, 'session-b')
  t.same(marked, ['session-a', 'session-b'])
  t.match(events.at(-1), { type: 'reauthenticated', subject: { detail: { method: 'password+totp' } } })

  await t.rejects(authentication.confirmPassword(user, 'guess 1', client, 'session-b'), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(authentication.confirmPassword(user, 'guess 2', client, 'session-b'), { code: 'INVALID_CREDENTIALS' })
  await t.rejects(authentication.confirmPassword(user, PASSWORD, client, 'session-b'), { code: 'RATE_LIMITED' }, 'a stolen session cannot guess on')
})

t.test('re-authentication with a mailed code: the mailbox is the proof; with TOTP its code too, the mailed one kept meanwhile', async (t) => {
  const { authentication, emailCodes, events, marked, usersWithTotp, user, mailedCode } = await setUp(t)
  await t.rejects(authentication.reauthenticate(user, {}, client, 'session-a'), { code: 'VALIDATION_FAILED' }, 'neither proof')
  emailCodes.send(user.email, { signUp: false })
  const code = await mailedCode()
  await t.rejects(authentication.reauthenticate(user, { password: PASSWORD, emailCode: code }, client, 'session-a'), { code: 'VALIDATION_FAILED' }, 'both')
  await t.rejects(authentication.reauthenticate(user, { emailCode: code === '000000' ? '000001' : '000000' }, client, 'session-a'), { code: 'INVALID_CODE' })
  t.same(events.at(-1), { type: 'login_failed', subject: { userId: user.id, sessionId: 'session-a', detail: { method: 'email_code' } } })
  await authentication.reauthenticate(user, { emailCode: code }, client, 'session-a')
  t.same(marked, ['session-a'])
  t.same(events.at(-1), { type: 'reauthenticated', subject: { userId: user.id, sessionId: 'session-a', detail: { method: 'email_code' } } })
  await t.rejects(authentication.reauthenticate(user, { emailCode: code }, client, 'session-a'), { code: 'INVALID_CODE' }, 'used once')

  usersWithTotp.add(user.id)
  emailCodes.send(user.email, { signUp: false })
  const second = await mailedCode()
  await t.rejects(authentication.reauthenticate(user, { emailCode: second }, client, 'session-b'), { code: 'MFA_REQUIRED' })
  await t.rejects(authentication.reauthenticate(user, { emailCode: second, code: '000000' }, client, 'session-b'), { code: 'INVALID_MFA_CODE' })
  await authentication.reauthenticate(user, { emailCode: second, code: '123456' }, client, 'session-b')
  t.same(events.at(-1), { type: 'reauthenticated', subject: { userId: user.id, sessionId: 'session-b', detail: { method: 'email_code+totp' } } })
})

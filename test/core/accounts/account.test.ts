import t, { type Test } from 'tap'
import type { AccountStore, UserRecord } from '../../../db/store.js'
import { createAccount, LIVE_RESET_LINKS, RESET_MAILS_PER_HOUR } from '../../../core/accounts/account.js'
import type { Actor } from '../../../core/sessions/actor.js'
import { InvalidCredentialsError } from '../../../core/errors.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { createEmailCodes } from '../../../core/email-codes/email-codes.js'
import { CLIENT, standIns } from './fakes.js'

const OPTIONS = { publicUrl: 'https://accounts.example.com', passwordResetTtlSeconds: 3600, emailVerificationTtlSeconds: 86_400 }
const PASSWORD = 'analytical engine'

/** The account's rules on a fresh store, with stand-ins for the services it calls. */
async function accountFor (t: Test, log: Logger = silentLogger) {
  const { store, clock, mailer, sessions, securityEvents, webhooks } = await standIns(t)
  const calls: string[] = []
  const account = createAccount({
    store,
    clock,
    log,
    passwords: { hash: async (password) => `hashed:${password}` },
    mailer,
    sessions,
    securityEvents,
    authentication: {
      async confirmPassword (user, password) {
        if (user.passwordHash !== `hashed:${password}`) throw new InvalidCredentialsError()
      },
      // The sign-in by mailed code is tested through its routes (test/routes/auth/email-code.test.ts).
      async completeSignIn () { throw new Error('no sign-in in these tests') }
    },
    emailCodes: createEmailCodes({ store, clock, mailer, log }, { publicUrl: OPTIONS.publicUrl }),
    loginThrottle: { async succeeded (email) { calls.push(`login throttle cleared for ${email}`) } },
    mfa: { async afterPasswordReset (userId) { calls.push(`mfa re-armed for ${userId}`) } },
    webhooks
  }, OPTIONS)
  return { account, store, clock, mailer, sessions, securityEvents, webhooks, calls }
}

/** Every mail waiting in the outbox (claimed, so each is read once). */
async function outbox (store: AccountStore) {
  const far = new Date(Date.now() + 400 * 86_400_000)
  return await store.claimMails(far, new Date(far.getTime() + 86_400_000), 100)
}

/** The token of the newest link to `path` in the outbox. */
async function mailedToken (store: AccountStore, path: string): Promise<string> {
  const links = (await outbox(store)).map(mail => new RegExp(`${OPTIONS.publicUrl}${path}#token=([A-Za-z0-9_-]+)`).exec(mail.text)?.[1])
  const token = links.filter(link => link !== undefined).at(-1)
  if (token === undefined) throw new Error(`no ${path} link in the outbox`)
  return token
}

async function registered (setup: Awaited<ReturnType<typeof accountFor>>, email = 'ada@example.com'): Promise<UserRecord> {
  const user = await setup.account.register({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, password: PASSWORD })
  await setup.mailer.idle()
  return user
}

const actorOf = (user: UserRecord, sessionId = 'session-0'): Actor => ({ user, sessionId, client: CLIENT })

t.test('registration refuses a common password and stores nothing', async (t) => {
  const { account, store } = await accountFor(t)
  await t.rejects(account.register({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', password: 'password123' }), { code: 'PASSWORD_TOO_COMMON' })
  t.equal(await store.findUserByEmail('ada@example.com'), undefined)
})

t.test('a registration mails a verification link that verifies the address once', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  t.equal(user.passwordHash, `hashed:${PASSWORD}`, 'the password is stored hashed')
  const token = await mailedToken(setup.store, '/verify-email')
  await setup.account.verifyEmail(token, CLIENT)
  t.equal((await setup.store.findUserByEmail(user.email))?.emailVerified, true)
  await t.rejects(setup.account.verifyEmail(token, CLIENT), { code: 'INVALID_VERIFICATION_TOKEN' }, 'a link works once')
})

t.test('a verification link expires after EMAIL_VERIFICATION_TTL', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  const token = await mailedToken(setup.store, '/verify-email')
  setup.clock.advance(OPTIONS.emailVerificationTtlSeconds * 1000)
  await t.rejects(setup.account.verifyEmail(token, CLIENT), { code: 'VERIFICATION_TOKEN_EXPIRED' })
  t.equal((await setup.store.findUserByEmail(user.email))?.emailVerified, false)
})

/** Asks for a reset mail for `email` and answers the token its link carries. */
async function resetLink (setup: Awaited<ReturnType<typeof accountFor>>, email: string): Promise<string> {
  setup.account.sendPasswordResetMail(email)
  await setup.mailer.idle()
  return await mailedToken(setup.store, '/reset-password')
}

t.test('a reset link sets the password, ends the lockout, re-arms the second factor and claims a never-verified address', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  const token = await resetLink(setup, user.email)
  await t.rejects(setup.account.resetPassword(token, 'password123', CLIENT), { code: 'PASSWORD_TOO_COMMON' })
  await setup.account.resetPassword(token, 'a brand new password', CLIENT)
  const after = await setup.store.findUserByEmail(user.email)
  t.equal(after?.passwordHash, 'hashed:a brand new password', 'a refused password did not burn the link')
  t.equal(after?.emailVerified, true, 'the link proved the address')
  t.same(setup.calls, [`login throttle cleared for ${user.email}`, `mfa re-armed for ${user.id}`])
  t.match(setup.securityEvents.events.at(-1), { type: 'password_reset', userId: user.id, detail: { address_claimed: true } })
  await t.rejects(setup.account.resetPassword(token, 'yet another password', CLIENT), { code: 'INVALID_RESET_TOKEN' }, 'a link works once')
})

t.test('a reset link expires after PASSWORD_RESET_TTL', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  const token = await resetLink(setup, user.email)
  setup.clock.advance(OPTIONS.passwordResetTtlSeconds * 1000)
  await t.rejects(setup.account.resetPassword(token, 'a brand new password', CLIENT), { code: 'RESET_TOKEN_EXPIRED' })
})

t.test('forgot-password mails nothing for an unknown address, and at most RESET_MAILS_PER_HOUR to a known one', async (t) => {
  const lines: string[] = []
  const setup = await accountFor(t, { ...silentLogger, info: (_object: object | string, message?: string) => { lines.push(message ?? '') } })
  const user = await registered(setup)
  await outbox(setup.store)
  setup.account.sendPasswordResetMail('nobody@example.com')
  await setup.mailer.idle()
  t.equal((await outbox(setup.store)).length, 0)

  for (let n = 0; n < RESET_MAILS_PER_HOUR + 2; n++) setup.account.sendPasswordResetMail(user.email)
  await setup.mailer.idle()
  t.equal((await outbox(setup.store)).length, RESET_MAILS_PER_HOUR)
  t.ok(lines.some(line => /quota/.test(line)), 'the refusal is logged')
})

t.test(`the last ${LIVE_RESET_LINKS} reset links stay live together`, async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  await outbox(setup.store)
  for (let n = 0; n < LIVE_RESET_LINKS + 1; n++) {
    setup.account.sendPasswordResetMail(user.email)
    await setup.mailer.idle()
  }
  const tokens = (await outbox(setup.store)).map(mail => /#token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1] ?? '')
  await t.rejects(setup.account.resetPassword(tokens[0], 'a brand new password', CLIENT), { code: 'INVALID_RESET_TOKEN' }, 'the oldest is void')
  await setup.account.resetPassword(tokens[1], 'a brand new password', CLIENT)
})

t.test('an email change needs a fresh session, warns the old address, ends every session and goes on in a new one', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  await setup.account.verifyEmail(await mailedToken(setup.store, '/verify-email'), CLIENT)
  const now = new Date(setup.clock.now())
  const refreshToken = { tokenHash: 'session-0-token', userId: user.id, familyId: 'session-0', expiresAt: new Date(now.getTime() + 3_600_000) }
  await setup.store.startSession({ id: 'session-0', userId: user.id, userAgent: null, ip: null }, refreshToken, now)

  setup.sessions.stale.add('session-0')
  await t.rejects(setup.account.updateProfile(actorOf(user), { email: 'ada@lovelace.example' }), { code: 'REAUTHENTICATION_REQUIRED' })
  t.equal((await setup.store.findUserById(user.id))?.email, user.email, 'nothing changed')

  setup.sessions.stale.clear()
  const { session } = await setup.account.updateProfile(actorOf(user), { email: 'ada@lovelace.example' })
  t.equal(session?.userId, user.id, 'the actor goes on in a new session')
  const changed = await setup.store.findUserById(user.id)
  t.match(changed, { email: 'ada@lovelace.example', emailVerified: false })
  await setup.mailer.idle()
  const mails = await outbox(setup.store)
  t.ok(mails.some(mail => mail.to === user.email), 'the old address is told')
  t.ok(mails.some(mail => mail.to === 'ada@lovelace.example' && mail.text.includes('/verify-email#token=')), 'the new one gets a link')
  t.same(setup.securityEvents.types(), ['session_revoked', 'email_changed'])
  t.match(setup.securityEvents.events[0], { detail: { sessions: 1 } })
})

t.test('a profile change without a new email needs no fresh session', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  setup.sessions.stale.add('session-0')
  t.same(await setup.account.updateProfile(actorOf(user), { firstName: 'Augusta', email: user.email }), {})
  t.equal((await setup.store.findUserById(user.id))?.firstName, 'Augusta')
})

t.test('a password change confirms the current password and records it', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  await t.rejects(setup.account.changePassword(actorOf(user), 'not my password', 'a brand new password'), { code: 'INVALID_CREDENTIALS' })
  await setup.account.changePassword(actorOf(user), PASSWORD, 'a brand new password')
  t.equal((await setup.store.findUserById(user.id))?.passwordHash, 'hashed:a brand new password')
  t.same(setup.securityEvents.types(), ['password_changed'])
})

t.test('deleting an account takes its password, or a fresh session when it has none', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  await t.rejects(setup.account.deleteAccount(actorOf(user), undefined), { code: 'VALIDATION_FAILED' })
  await t.rejects(setup.account.deleteAccount(actorOf(user), 'not my password'), { code: 'INVALID_CREDENTIALS' })
  await setup.account.deleteAccount(actorOf(user), PASSWORD)
  t.equal(await setup.store.findUserById(user.id), undefined)

  const passwordless = await setup.store.createUser({ firstName: 'Grace', lastName: 'Hopper', username: null, email: 'grace@example.com', passwordHash: null })
  setup.sessions.stale.add('session-0')
  await t.rejects(setup.account.deleteAccount(actorOf(passwordless), undefined), { code: 'REAUTHENTICATION_REQUIRED' })
  setup.sessions.stale.clear()
  await setup.account.deleteAccount(actorOf(passwordless), undefined)
  t.equal(await setup.store.findUserById(passwordless.id), undefined)
})

t.test('webhooks: user.created at registration, user.updated at a profile change, user.deleted at deletion; none for a refused change', async (t) => {
  const setup = await accountFor(t)
  const user = await registered(setup)
  await setup.account.updateProfile(actorOf(user), { firstName: 'Augusta' })
  await t.rejects(setup.account.deleteAccount(actorOf(user), 'not my password'))
  await setup.account.deleteAccount(actorOf(user), PASSWORD)
  t.same(setup.webhooks.emitted, [
    { type: 'user.created', userId: user.id, email: 'ada@example.com' },
    { type: 'user.updated', userId: user.id, email: 'ada@example.com' },
    { type: 'user.deleted', userId: user.id, email: 'ada@example.com' }
  ])
  // An email change is the email_changed security event's user.updated (core/webhooks/types.ts): not emitted twice.
  const other = await registered(setup, 'grace@example.com')
  await setup.account.updateProfile(actorOf(other), { email: 'grace@hopper.example' })
  t.same(setup.webhooks.emitted.slice(3).map(event => event.type), ['user.created'])
  t.ok(setup.securityEvents.types().includes('email_changed'))
})

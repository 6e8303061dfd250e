import { randomBytes } from 'node:crypto'
import { Secret, TOTP } from 'otpauth'
import t, { type Test } from 'tap'
import type { Actor } from '../../../core/sessions/actor.js'
import type { Client, SecurityEventType } from '../../../core/events/security-events.js'
import type { MailMessage } from '../../../core/mail/mailer.js'
import { createMfa, MFA_MAX_FAILURES, MFA_MAX_WRONG_CODES, MFA_WRONG_CODES_AFTER_RESET, type MfaDependencies, type MfaOptions } from '../../../core/mfa/mfa.js'
import { isSealed } from '../../../core/secrets/sealing.js'
import { ReauthenticationRequiredError } from '../../../core/errors.js'
import type { AccountStore } from '../../../db/store.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

/* The second factor's rules (core/mfa/mfa.ts) on a fresh store, with a test clock and fakes for sessions, events and mail. */

const STEP_MS = 30_000
const client: Client = { ip: '203.0.113.7', userAgent: 'test', requestId: 'req-1' }
const options: MfaOptions = { issuer: 'https://issuer.example', mfaTokenTtlSeconds: 300 }

/** The code an authenticator app shows at the clock's time, `steps` steps away (otpauth's own TOTP, not the service's). */
function codeAt (secret: string, clock: TestClock, steps = 0): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30, timestamp: clock.now() + steps * STEP_MS })
}

interface Fixture {
  store: AccountStore
  clock: TestClock
  actor: Actor
  deps: MfaDependencies
  events: SecurityEventType[]
  /** The calls to sessions.endAll, as [userId, exceptSessionId]. */
  endedAll: Array<[number, string | undefined]>
  mailed: MailMessage[]
  wakes: () => number
  /** Makes sessions.requireFresh refuse, as past REAUTH_MAX_AGE. */
  stale: () => void
}

async function fixture (t: Test): Promise<Fixture> {
  const store = await testStore(t)
  // Ten seconds into a time step, so that a code computed now is judged in its own step.
  const clock = testClock(Math.floor(Date.now() / STEP_MS) * STEP_MS + 10_000)
  const user = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'hash' })
  const events: SecurityEventType[] = []
  const endedAll: Array<[number, string | undefined]> = []
  const mailed: MailMessage[] = []
  let wakes = 0
  let fresh = true
  const deps: MfaDependencies = {
    store,
    clock,
    sessions: {
      async requireFresh () { if (!fresh) throw new ReauthenticationRequiredError() },
      async requireSecondFactor () {},
      async endAll (userId, _client, { exceptSessionId } = {}) { endedAll.push([userId, exceptSessionId]); return 0 }
    },
    securityEvents: { async record (type) { events.push(type) } },
    mailer: {
      async enqueue (message) { mailed.push(message) },
      forOutbox: message => message,
      wake () { wakes++ }
    }
  }
  return { store, clock, actor: { user, sessionId: 'session-1', client }, deps, events, endedAll, mailed, wakes: () => wakes, stale: () => { fresh = false } }
}

/** TOTP on for the fixture's user: its secret and recovery codes; the confirming code's step is used. */
async function enableTotp (f: Fixture, mfa = createMfa(f.deps, options)) {
  const { secret } = await mfa.beginTotp(f.actor)
  const recoveryCodes = await mfa.confirmTotp(f.actor, codeAt(secret, f.clock))
  return { secret, recoveryCodes }
}

t.test('confirming TOTP with a current code turns it on, gives ten recovery codes and ends the other sessions', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const { secret, otpauthUrl } = await mfa.beginTotp(f.actor)
  t.match(otpauthUrl, /^otpauth:\/\/totp\/.*ada%40example\.com\?.*secret=/, 'the URL names the account and carries the secret')
  t.equal(await mfa.isRequired(f.actor.user.id), false, 'a secret not yet confirmed asks logins for nothing')

  const recoveryCodes = await mfa.confirmTotp(f.actor, codeAt(secret, f.clock))
  t.equal(recoveryCodes.length, 10)
  t.equal(new Set(recoveryCodes).size, 10, 'each code differs')
  t.equal(await mfa.isRequired(f.actor.user.id), true)
  t.same(await mfa.status(f.actor.user.id), { totp: true, passkeys: false, recoveryCodesLeft: 10 })
  t.same(f.endedAll, [[f.actor.user.id, 'session-1']], 'every session but this one ends')
  t.same(f.events, ['mfa_enabled'])
  await t.rejects(mfa.beginTotp(f.actor), { code: 'TOTP_ALREADY_ENABLED', statusCode: 409 })
})

t.test('a code two steps away does not confirm a new secret', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const { secret } = await mfa.beginTotp(f.actor)
  await t.rejects(mfa.confirmTotp(f.actor, codeAt(secret, f.clock, 2)), { code: 'INVALID_MFA_CODE', statusCode: 400 })
  t.equal(await mfa.isRequired(f.actor.user.id), false)
  await t.rejects(createMfa(f.deps, options).confirmTotp({ ...f.actor, user: { ...f.actor.user, id: f.actor.user.id + 1 } }, '123456'),
    { code: 'TOTP_SETUP_NOT_STARTED', statusCode: 409 }, 'nothing to confirm for a user who began no setup')
})

t.test('setting up, turning off and renewing codes need a fresh session', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const { recoveryCodes } = await enableTotp(f, mfa)
  f.stale()
  await t.rejects(mfa.beginTotp(f.actor), { code: 'REAUTHENTICATION_REQUIRED' })
  await t.rejects(mfa.disableTotp(f.actor), { code: 'REAUTHENTICATION_REQUIRED' })
  await t.rejects(mfa.renewRecoveryCodes(f.actor), { code: 'REAUTHENTICATION_REQUIRED' })
  t.equal(await mfa.isRequired(f.actor.user.id), true, 'TOTP is still on')
  t.equal(await f.store.countRecoveryCodes(f.actor.user.id), recoveryCodes.length, 'the codes are unchanged')
})

t.test('turning TOTP off records it and tells the owner only when it was on; renewing codes then is refused', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  await mfa.beginTotp(f.actor)
  await mfa.disableTotp(f.actor)
  t.same(f.mailed, [], 'an unconfirmed secret going away is no news')
  t.same(f.events, [])

  await enableTotp(f, mfa)
  await mfa.disableTotp(f.actor)
  t.same(f.events, ['mfa_enabled', 'mfa_disabled'])
  t.equal(f.mailed.length, 1)
  t.equal(f.mailed[0]?.to, 'ada@example.com')
  t.same(await mfa.status(f.actor.user.id), { totp: false, passkeys: false, recoveryCodesLeft: 0 })
  await mfa.disableTotp(f.actor)
  t.equal(f.mailed.length, 1, 'idempotent')
  await t.rejects(mfa.renewRecoveryCodes(f.actor), { code: 'TOTP_NOT_ENABLED', statusCode: 409 })
})

t.test('a TOTP code passes a login\'s second step once; its step cannot be used again', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const { secret } = await enableTotp(f, mfa)
  const { user } = f.actor
  t.match(await mfa.attempt(await mfa.challenge(user.id), user, codeAt(secret, f.clock)), { outcome: 'refused', method: 'totp' },
    'the confirming code\'s step counts as used')
  f.clock.advance(STEP_MS)
  const code = codeAt(secret, f.clock)
  const mfaToken = await mfa.challenge(user.id)
  t.match(await mfa.attempt(mfaToken, user, code.slice(0, 3) + ' ' + code.slice(3)), { outcome: 'passed', userId: user.id, method: 'totp' })
  t.equal(await mfa.openChallenge(mfaToken), undefined, 'a used mfa_token is closed')
  t.match(await mfa.attempt(await mfa.challenge(user.id), user, code), { outcome: 'refused' }, 'a replay on a new mfa_token')
  t.match(await mfa.attempt(mfaToken, user, code), { outcome: 'invalid' })
})

t.test('a recovery code passes once, whatever its case and spacing, and renewing the codes voids the old ones', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const { recoveryCodes } = await enableTotp(f, mfa)
  const { user } = f.actor
  const [first = '', second = ''] = recoveryCodes
  t.match(await mfa.confirmCode(user, ` ${first.toUpperCase().replaceAll('-', ' ')} `), { outcome: 'passed', method: 'recovery_code' })
  t.match(await mfa.confirmCode(user, first), { outcome: 'refused', method: 'recovery_code' }, 'used up')
  t.equal((await mfa.status(user.id)).recoveryCodesLeft, 9)

  const renewed = await mfa.renewRecoveryCodes(f.actor)
  t.equal(renewed.length, 10)
  t.match(await mfa.confirmCode(user, second), { outcome: 'refused' }, 'an old code is void')
  t.match(await mfa.confirmCode(user, renewed[0] ?? ''), { outcome: 'passed' })
  t.ok(f.events.includes('recovery_codes_renewed'))
})

t.test('an mfa_token expires after its TTL and is void after MFA_MAX_FAILURES wrong codes', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const { secret } = await enableTotp(f, mfa)
  const { user } = f.actor
  const expiring = await mfa.challenge(user.id)
  t.match(await mfa.openChallenge(expiring), { userId: user.id, failures: 0, usedAt: null })
  f.clock.advance(options.mfaTokenTtlSeconds * 1000)
  t.equal(await mfa.openChallenge(expiring), undefined, 'expired')
  t.match(await mfa.attempt(expiring, user, codeAt(secret, f.clock)), { outcome: 'invalid' })

  const guessed = await mfa.challenge(user.id)
  for (let failure = 1; failure <= MFA_MAX_FAILURES; failure++) {
    t.match(await mfa.attempt(guessed, user, 'not-a-code'), { outcome: 'refused', failures: failure })
  }
  t.equal(await mfa.openChallenge(guessed), undefined, 'void')
  t.match(await mfa.attempt(guessed, user, codeAt(secret, f.clock)), { outcome: 'invalid' }, 'the right code too')
})

t.test('the provider of a sign-in rides in its mfa_token', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const afterProvider = await mfa.challenge(f.actor.user.id, 'google')
  t.equal(mfa.firstStepOf(afterProvider), 'google')
  t.ok(await mfa.openChallenge(afterProvider), 'the name is part of the token the store knows')
  t.equal(mfa.firstStepOf(await mfa.challenge(f.actor.user.id)), undefined, 'after a password: none')
})

t.test('the wrong code that reaches MFA_MAX_WRONG_CODES locks the second factor and mails the owner once; a reset gives back a few guesses', async (t) => {
  const f = await fixture(t)
  const mfa = createMfa(f.deps, options)
  const { secret } = await enableTotp(f, mfa)
  const { user } = f.actor
  const wrong = async () => await mfa.attempt(await mfa.challenge(user.id), user, '000000')
  for (let count = 1; count < MFA_MAX_WRONG_CODES; count++) t.match(await wrong(), { outcome: 'refused' })
  t.equal(f.wakes(), 0, 'no mail before the cap')
  t.match(await wrong(), { outcome: 'refused', lockedNow: true })
  t.equal(f.wakes(), 1, 'the mail worker is woken for the lock mail')
  t.equal(await f.store.countPendingMails(), 1, 'the lock mail is in the outbox')
  f.clock.advance(STEP_MS)
  t.match(await mfa.attempt(await mfa.challenge(user.id), user, codeAt(secret, f.clock)), { outcome: 'locked' }, 'the right code is refused too')
  t.equal(await f.store.countPendingMails(), 1, 'mailed once')

  await mfa.afterPasswordReset(user.id)
  for (let count = 1; count < MFA_WRONG_CODES_AFTER_RESET; count++) t.match(await wrong(), { outcome: 'refused' })
  t.match(await wrong(), { outcome: 'refused', lockedNow: true }, `${MFA_WRONG_CODES_AFTER_RESET} more wrong codes lock it again`)
  await mfa.afterPasswordReset(user.id)
  t.match(await mfa.attempt(await mfa.challenge(user.id), user, codeAt(secret, f.clock)), { outcome: 'passed' })
})

t.test('with SIGNING_KEY_ENCRYPTION_KEY the TOTP secret is sealed at rest and only that key opens it', async (t) => {
  const f = await fixture(t)
  const key = randomBytes(32)
  const mfa = createMfa(f.deps, { ...options, signingKeyEncryptionKey: key })
  const { secret } = await enableTotp(f, mfa)
  const stored = await f.store.findTotp(f.actor.user.id)
  t.ok(stored !== undefined && isSealed(stored.secret), 'sealed in the store')
  t.not(stored?.secret, secret)
  f.clock.advance(STEP_MS)
  const code = codeAt(secret, f.clock)
  await t.rejects(createMfa(f.deps, { ...options, signingKeyEncryptionKey: randomBytes(32) }).confirmCode(f.actor.user, code),
    /does not open the TOTP secret/, 'another key')
  await t.rejects(createMfa(f.deps, options).confirmCode(f.actor.user, code), /SIGNING_KEY_ENCRYPTION_KEY is not set/, 'no key')
  t.match(await mfa.confirmCode(f.actor.user, code), { outcome: 'passed' })
})

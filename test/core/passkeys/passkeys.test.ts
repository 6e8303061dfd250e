import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import t, { type Test } from 'tap'
import type { Client, SecurityEventType } from '../../../core/events/security-events.js'
import { createSignInCompletion } from '../../../core/authentication/complete-sign-in.js'
import { silentLogger } from '../../../core/logger.js'
import { ReauthenticationRequiredError } from '../../../core/errors.js'
import type { MailMessage } from '../../../core/mail/mailer.js'
import {
  createPasskeys, DEFAULT_PASSKEY_NAME, PASSKEY_CHALLENGE_TTL_MS, type Passkeys, type PasskeysDependencies, type PasskeysOptions
} from '../../../core/passkeys/passkeys.js'
import type { AccountStore, UserRecord } from '../../../db/store.js'
import { SoftwareCredential } from '../../fixtures/authenticator.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { markEmailVerified } from '../../fixtures/factories.js'

/*
 * The passkey rules (core/passkeys/passkeys.ts) on a fresh store, with a test clock and fakes for
 * sessions, events, the lockout and mail. Answers come from the software authenticator
 * (test/fixtures/authenticator.ts); the ceremonies over HTTP are test/routes/passkeys.test.ts.
 */

const client: Client = { ip: '203.0.113.7', userAgent: 'test', requestId: 'req-1' }
const options: PasskeysOptions = { rpId: 'localhost', rpName: 'account-service', origins: ['http://localhost:3000'] }
const SESSION = 'session-1'

interface Fixture {
  store: AccountStore
  clock: TestClock
  ada: UserRecord
  bob: UserRecord
  deps: PasskeysDependencies
  passkeys: Passkeys
  events: Array<{ type: SecurityEventType, userId: number | null, detail?: Record<string, unknown> }>
  mailed: MailMessage[]
  /** Users whose sessions.start was called, sessions whose markAuthenticated was, emails whose lockout was cleared. */
  started: number[]
  /** Sessions whose last password proof is older than REAUTH_MAX_AGE: requireFresh refuses them. */
  stale: Set<string>
  marked: string[]
  cleared: string[]
}

/** The rules with a real completeSignIn (core/authentication/complete-sign-in.ts) over the fakes; REQUIRE_EMAIL_VERIFICATION is its setting. */
async function fixture (t: Test, { requireEmailVerification = false } = {}): Promise<Fixture> {
  const store = await testStore(t)
  const clock = testClock()
  const newUser = (firstName: string, email: string) => ({ firstName, lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })
  const ada = await store.createUser(newUser('Ada', 'ada@example.com'))
  const bob = await store.createUser(newUser('Bob', 'bob@example.com'))
  const f: Omit<Fixture, 'deps' | 'passkeys'> = { store, clock, ada, bob, events: [], mailed: [], started: [], stale: new Set(), marked: [], cleared: [] }
  const sessions = {
    async start (userId: number) {
      f.started.push(userId)
      return { userId, sessionId: 'new-session', accessToken: 'access', refreshToken: 'refresh', refreshTokenMaxAge: 60 }
    },
    async markAuthenticated (sessionId: string) { f.marked.push(sessionId) },
    async requireFresh (sessionId: string) { if (f.stale.has(sessionId)) throw new ReauthenticationRequiredError() },
    async requireSecondFactor () {}
  }
  const securityEvents: PasskeysDependencies['securityEvents'] = { async record (type, _client, { userId, detail }) { f.events.push({ type, userId, detail }) } }
  const completeSignIn = createSignInCompletion({
    // A passkey is two factors: the second-factor step is never asked.
    mfa: {
      async isRequired () {
        t.fail('a passkey sign-in asks for no second factor')
        return false
      },
      challenge: async () => 'unused'
    },
    loginThrottle: { async succeeded (email) { f.cleared.push(email) } },
    sessions,
    securityEvents
  }, { requireEmailVerification })
  const deps: PasskeysDependencies = {
    store,
    clock,
    log: silentLogger,
    sessions,
    securityEvents,
    authentication: { completeSignIn },
    mailer: { async enqueue (message) { f.mailed.push(message) } }
  }
  return { ...f, deps, passkeys: createPasskeys(deps, options) }
}

/** A passkey of the user, registered through the rules with a software authenticator. */
async function addPasskey (f: Fixture, user: UserRecord, name?: string) {
  const credential = new SoftwareCredential()
  const answer = credential.register(await f.passkeys.registrationOptions(user, SESSION)) as RegistrationResponseJSON
  const passkey = await f.passkeys.register(user, answer, name, client, SESSION)
  return { credential, passkey }
}

/** The authenticator's answer to fresh login options. */
async function assertion (f: Fixture, credential: SoftwareCredential, tweaks: Parameters<SoftwareCredential['assert']>[1] = {}) {
  return credential.assert(await f.passkeys.authenticationOptions(), tweaks) as AuthenticationResponseJSON
}

const types = (f: Fixture) => f.events.map(event => event.type)

t.test('registration options ask for a discoverable credential with user verification and exclude the user\'s passkeys', async (t) => {
  const f = await fixture(t)
  const { passkey } = await addPasskey(f, f.ada)
  const offered = await f.passkeys.registrationOptions(f.ada, SESSION)
  t.match(offered, {
    rp: { id: 'localhost', name: 'account-service' },
    user: { id: Buffer.from(String(f.ada.id)).toString('base64url'), name: 'ada@example.com', displayName: 'Ada Lovelace' },
    timeout: PASSKEY_CHALLENGE_TTL_MS,
    attestation: 'none',
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' }
  })
  t.same(offered.excludeCredentials?.map(excluded => excluded.id), [passkey.credentialId])
  t.same((await f.passkeys.registrationOptions(f.bob, SESSION)).excludeCredentials, [], 'another user\'s are not excluded')

  const login = await f.passkeys.authenticationOptions()
  t.match(login, { rpId: 'localhost', userVerification: 'required', timeout: PASSKEY_CHALLENGE_TTL_MS })
  t.same(login.allowCredentials ?? [], [], 'the authenticator offers the passkeys it holds')
})

t.test('a registered passkey is the user\'s, recorded and mailed to its owner; its answer does not register twice', async (t) => {
  const f = await fixture(t)
  const credential = new SoftwareCredential()
  const answer = credential.register(await f.passkeys.registrationOptions(f.ada, SESSION)) as RegistrationResponseJSON
  await t.rejects(f.passkeys.register(f.bob, answer, 'Stolen', client, SESSION), { code: 'INVALID_PASSKEY_REGISTRATION', statusCode: 400 },
    'not by another user')
  const passkey = await f.passkeys.register(f.ada, answer, undefined, client, SESSION)
  t.match(passkey, { userId: f.ada.id, credentialId: credential.id, name: DEFAULT_PASSKEY_NAME, transports: ['internal'], lastUsedAt: null })
  t.same((await f.passkeys.list(f.ada.id)).map(listed => listed.id), [passkey.id])
  t.same(await f.passkeys.list(f.bob.id), [])
  t.same(types(f), ['passkey_added'])
  t.equal(f.mailed.length, 1)
  t.equal(f.mailed[0]?.to, 'ada@example.com')
  await t.rejects(f.passkeys.register(f.ada, answer, undefined, client, SESSION), { code: 'INVALID_PASSKEY_REGISTRATION' }, 'its challenge is used')

  const again = credential.register(await f.passkeys.registrationOptions(f.bob, SESSION)) as RegistrationResponseJSON
  await t.rejects(f.passkeys.register(f.bob, again, undefined, client, SESSION), { code: 'PASSKEY_ALREADY_REGISTERED', statusCode: 409 })
})

t.test('a passkey registered without user verification is refused', async (t) => {
  const f = await fixture(t)
  const credential = new SoftwareCredential()
  const answer = credential.register(await f.passkeys.registrationOptions(f.ada, SESSION), { userVerified: false }) as RegistrationResponseJSON
  await t.rejects(f.passkeys.register(f.ada, answer, 'Key', client, SESSION), { code: 'INVALID_PASSKEY_REGISTRATION' })
  t.same(await f.passkeys.list(f.ada.id), [])
  t.same(f.mailed, [])
})

t.test('adding or removing a passkey needs a fresh session', async (t) => {
  const f = await fixture(t)
  const { passkey } = await addPasskey(f, f.ada, 'Laptop')
  f.stale.add(SESSION)
  await t.rejects(f.passkeys.registrationOptions(f.ada, SESSION), { code: 'REAUTHENTICATION_REQUIRED', statusCode: 403 })
  await t.rejects(f.passkeys.remove(f.ada.id, passkey.id, client, SESSION), { code: 'REAUTHENTICATION_REQUIRED', statusCode: 403 })
  t.same((await f.passkeys.list(f.ada.id)).map(({ id }) => id), [passkey.id], 'the passkey stays')
})

t.test('a passkey is renamed and removed by its owner only', async (t) => {
  const f = await fixture(t)
  const { passkey } = await addPasskey(f, f.ada, 'Laptop')
  await t.rejects(f.passkeys.rename(f.bob.id, passkey.id, 'Mine'), { code: 'PASSKEY_NOT_FOUND', statusCode: 404 })
  await t.rejects(f.passkeys.remove(f.bob.id, passkey.id, client, SESSION), { code: 'PASSKEY_NOT_FOUND', statusCode: 404 })
  t.match(await f.passkeys.rename(f.ada.id, passkey.id, 'Phone'), { id: passkey.id, name: 'Phone' })
  await f.passkeys.remove(f.ada.id, passkey.id, client, SESSION)
  t.same(await f.passkeys.list(f.ada.id), [])
  t.same(types(f), ['passkey_added', 'passkey_removed'])
  t.same(f.events.at(-1)?.detail, { passkey_id: passkey.id, name: 'Phone' }, 'the event names the passkey removed')
  await t.rejects(f.passkeys.remove(f.ada.id, passkey.id, client, SESSION), { code: 'PASSKEY_NOT_FOUND' }, 'once')
})

t.test('a passkey logs its owner in, clears the lockout and starts a session; its answer is good once', async (t) => {
  const f = await fixture(t)
  const { credential } = await addPasskey(f, f.ada)
  const answer = await assertion(f, credential)
  const { user, session } = await f.passkeys.logIn(answer, client)
  t.equal(user.id, f.ada.id)
  t.equal(session.sessionId, 'new-session')
  t.same(f.started, [f.ada.id])
  t.same(f.cleared, ['ada@example.com'])
  t.same(types(f), ['passkey_added', 'passkey_login'])
  t.ok((await f.passkeys.list(f.ada.id))[0]?.lastUsedAt, 'its use is recorded')
  await t.rejects(f.passkeys.logIn(answer, client), { code: 'INVALID_PASSKEY', statusCode: 401 }, 'a replayed answer')
})

t.test('an answer to an expired or never issued challenge is refused', async (t) => {
  const f = await fixture(t)
  const { credential } = await addPasskey(f, f.ada)
  const late = await assertion(f, credential)
  f.clock.advance(PASSKEY_CHALLENGE_TTL_MS)
  await t.rejects(f.passkeys.logIn(late, client), { code: 'INVALID_PASSKEY' }, 'expired')
  const forged = await assertion(f, credential, { challenge: Buffer.from('forged').toString('base64url') })
  await t.rejects(f.passkeys.logIn(forged, client), { code: 'INVALID_PASSKEY' }, 'never issued')
  t.same(f.started, [])
})

t.test('a login without user verification, or from another origin, is refused and recorded against the owner', async (t) => {
  const f = await fixture(t)
  const { credential } = await addPasskey(f, f.ada)
  await t.rejects(f.passkeys.logIn(await assertion(f, credential, { userVerified: false }), client), { code: 'INVALID_PASSKEY' })
  await t.rejects(f.passkeys.logIn(await assertion(f, credential, { origin: 'https://evil.example' }), client), { code: 'INVALID_PASSKEY' })
  t.match(f.events.slice(1), [{ type: 'login_failed', userId: f.ada.id }, { type: 'login_failed', userId: f.ada.id }])
  t.equal(f.events.length, 3)
  t.same(f.started, [])
})

t.test('a user handle that is not the passkey owner\'s is refused', async (t) => {
  const f = await fixture(t)
  const { credential } = await addPasskey(f, f.ada)
  const answer = await assertion(f, credential, { userHandle: Buffer.from(String(f.bob.id)).toString('base64url') })
  await t.rejects(f.passkeys.logIn(answer, client), { code: 'INVALID_PASSKEY' })
  t.same(f.started, [])
})

t.test('a signature counter that goes back is refused and recorded: a cloned authenticator', async (t) => {
  const f = await fixture(t)
  const { credential } = await addPasskey(f, f.ada)
  await f.passkeys.logIn(await assertion(f, credential, { counter: 5 }), client)
  await t.rejects(f.passkeys.logIn(await assertion(f, credential, { counter: 3 }), client), { code: 'PASSKEY_COUNTER_REGRESSED', statusCode: 401 })
  t.same(types(f), ['passkey_added', 'passkey_login', 'passkey_counter_regressed'])
  t.same(f.started, [f.ada.id], 'one session only')
})

t.test('with REQUIRE_EMAIL_VERIFICATION a passkey does not log in an account whose email is unverified', async (t) => {
  const f = await fixture(t, { requireEmailVerification: true })
  const { credential } = await addPasskey(f, f.ada)
  await t.rejects(f.passkeys.logIn(await assertion(f, credential), client), { code: 'EMAIL_NOT_VERIFIED', statusCode: 403 })
  t.same(f.started, [])
  t.same(f.cleared, [], 'the lockout stays')
  await markEmailVerified(f.store, f.ada.id, new Date(f.clock.now()))
  t.match(await f.passkeys.logIn(await assertion(f, credential), client), { user: { id: f.ada.id, emailVerified: true } })
})

t.test('a passkey re-authenticates its owner\'s session only', async (t) => {
  const f = await fixture(t)
  const { credential: adas } = await addPasskey(f, f.ada)
  const { credential: bobs } = await addPasskey(f, f.bob)
  await t.rejects(f.passkeys.reauthenticate(f.ada, await assertion(f, bobs), client, SESSION), { code: 'INVALID_PASSKEY' })
  t.same(f.marked, [], 'another user\'s passkey proves nothing')
  t.match(f.events.at(-1), { type: 'login_failed', userId: f.ada.id })
  await f.passkeys.reauthenticate(f.ada, await assertion(f, adas), client, SESSION)
  t.same(f.marked, [SESSION])
  t.match(f.events.at(-1), { type: 'reauthenticated', userId: f.ada.id })
})

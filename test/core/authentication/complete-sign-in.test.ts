import t, { type Test } from 'tap'
import { accountRefusal, createSignInCompletion } from '../../../core/authentication/complete-sign-in.js'
import type { UserRecord } from '../../../db/store.js'
import { testStore } from '../../fixtures/database.js'
import { CLIENT, fakeSessions, recordingEvents } from '../accounts/fakes.js'

/*
 * The one end of every sign-in (core/authentication/complete-sign-in.ts), with fakes that record what it
 * asked: sessions started (with their methods), security events, lockouts cleared, mfa_tokens issued.
 * The ways in that call it are tested in their own files (authentication, passkeys, routes/oidc).
 */

async function completion (t: Test, { requireEmailVerification = false } = {}) {
  const store = await testStore(t)
  const user = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'hash' })
  const sessions = fakeSessions()
  const securityEvents = recordingEvents()
  const cleared: string[] = []
  const withTotp = new Set<number>()
  const asked: number[] = []
  const completeSignIn = createSignInCompletion({
    mfa: {
      async isRequired (userId) {
        asked.push(userId)
        return withTotp.has(userId)
      },
      challenge: async (userId, provider) => `mfa-token-${userId}-${provider ?? 'password'}`
    },
    loginThrottle: { async succeeded (email) { cleared.push(email) } },
    sessions,
    securityEvents
  }, { requireEmailVerification })
  /** The user as the store holds it, verified or disabled as a test needs. */
  const ada = (changes: Partial<UserRecord> = {}): UserRecord => ({ ...user, ...changes })
  return { completeSignIn, ada, sessions, securityEvents, cleared, withTotp, asked }
}

t.test('each way in starts a session with its method and records its event', async (t) => {
  const { completeSignIn, ada, sessions, securityEvents, cleared } = await completion(t)
  const password = await completeSignIn({ user: ada(), method: { kind: 'password' }, client: CLIENT })
  t.match(password, { kind: 'session', session: { userId: ada().id, sessionId: 'session-1' } })
  const passkey = await completeSignIn({ user: ada(), method: { kind: 'passkey', passkeyId: 'pk-1' }, client: CLIENT })
  t.equal(passkey.session.sessionId, 'session-2')
  await completeSignIn({ user: ada(), method: { kind: 'provider', provider: 'test' }, client: CLIENT })
  t.same(sessions.started.map(started => started.methods), [['password'], ['passkey'], ['provider']])
  t.same(securityEvents.events, [
    { type: 'login', userId: ada().id, sessionId: 'session-1', detail: { method: 'password' } },
    { type: 'passkey_login', userId: ada().id, sessionId: 'session-2', detail: { passkey_id: 'pk-1' } },
    { type: 'login', userId: ada().id, sessionId: 'session-3', detail: { method: 'oidc', provider: 'test' } }
  ])
  t.same(cleared, ['ada@example.com'], 'only the passkey clears the lockout here (a password settles it where it is judged)')
})

t.test('a disabled account is refused before anything else, an unverified one only with REQUIRE_EMAIL_VERIFICATION', async (t) => {
  const strict = await completion(t, { requireEmailVerification: true })
  const disabled = strict.ada({ disabledAt: new Date(), emailVerified: false })
  for (const method of [{ kind: 'password' as const }, { kind: 'passkey' as const, passkeyId: 'pk-1' }, { kind: 'provider' as const, provider: 'test' }]) {
    await t.rejects(strict.completeSignIn({ user: disabled, method, client: CLIENT }), { code: 'ACCOUNT_DISABLED', statusCode: 403 }, method.kind)
    await t.rejects(strict.completeSignIn({ user: strict.ada(), method, client: CLIENT }), { code: 'EMAIL_NOT_VERIFIED', statusCode: 403 }, method.kind)
  }
  t.same(strict.sessions.started, [], 'no session')
  t.same(strict.securityEvents.events, [], 'no event')
  t.same(strict.cleared, [], 'the lockout stays')
  t.same(strict.asked, [], 'the second factor is not asked about')
  t.match(await strict.completeSignIn({ user: strict.ada({ emailVerified: true }), method: { kind: 'password' }, client: CLIENT }), { kind: 'session' })

  const lenient = await completion(t)
  t.match(await lenient.completeSignIn({ user: lenient.ada(), method: { kind: 'password' }, client: CLIENT }), { kind: 'session' }, 'without the setting an unverified address signs in')
})

t.test('one factor on an account with TOTP yields an mfa_token and no session; a passkey is two factors', async (t) => {
  const { completeSignIn, ada, sessions, withTotp } = await completion(t)
  withTotp.add(ada().id)
  t.same(await completeSignIn({ user: ada(), method: { kind: 'password' }, client: CLIENT }), { kind: 'second_factor', mfaToken: `mfa-token-${ada().id}-password` })
  t.same(await completeSignIn({ user: ada(), method: { kind: 'provider', provider: 'test' }, client: CLIENT }), { kind: 'second_factor', mfaToken: `mfa-token-${ada().id}-test` },
    'the provider rides in the token')
  t.same(sessions.started, [], 'no session before the code')
  t.match(await completeSignIn({ user: ada(), method: { kind: 'passkey', passkeyId: 'pk-1' }, client: CLIENT }), { kind: 'session' })
  t.same(sessions.started.map(started => started.methods), [['passkey']])
})

t.test('what the method already read of the second factor is not asked again', async (t) => {
  const { completeSignIn, ada, asked, withTotp } = await completion(t)
  withTotp.add(ada().id)
  t.match(await completeSignIn({ user: ada(), method: { kind: 'password' }, client: CLIENT, secondFactorRequired: false }), { kind: 'session' })
  t.match(await completeSignIn({ user: ada(), method: { kind: 'password' }, client: CLIENT, secondFactorRequired: true }), { kind: 'second_factor' })
  t.same(asked, [])
})

t.test('the second step signs in with both factors; the address was judged at the first', async (t) => {
  const { completeSignIn, ada, sessions, securityEvents, withTotp, cleared } = await completion(t, { requireEmailVerification: true })
  withTotp.add(ada().id)
  const afterPassword = await completeSignIn({ user: ada(), method: { kind: 'password' }, client: CLIENT, secondFactor: 'totp' })
  t.equal(afterPassword.session.userId, ada().id)
  await completeSignIn({ user: ada(), method: { kind: 'provider', provider: 'test' }, client: CLIENT, secondFactor: 'recovery_code' })
  t.same(sessions.started.map(started => started.methods), [['password', 'totp'], ['provider', 'recovery_code']])
  t.same(securityEvents.events.map(event => event.detail), [{ method: 'password+totp' }, { method: 'oidc+recovery_code', provider: 'test' }])
  t.same(cleared, [], 'the code settled the lockout where it was judged')
  await t.rejects(completeSignIn({ user: ada({ disabledAt: new Date() }), method: { kind: 'password' }, client: CLIENT, secondFactor: 'totp' }), { code: 'ACCOUNT_DISABLED' })
})

t.test('accountRefusal names the same refusals for the steps that answer before a sign-in completes', async (t) => {
  const now = new Date()
  t.equal(accountRefusal({ disabledAt: now, emailVerified: false }, true), 'account_disabled')
  t.equal(accountRefusal({ disabledAt: null, emailVerified: false }, true), 'email_not_verified')
  t.equal(accountRefusal({ disabledAt: null, emailVerified: false }, false), undefined)
  t.equal(accountRefusal({ disabledAt: null, emailVerified: true }, true), undefined)
})

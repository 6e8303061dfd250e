import t from 'tap'
import { createProveAddress } from '../../../core/accounts/prove-address.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { CLIENT, recordingEvents } from './fakes.js'

/*
 * The one function every proof of an address calls (core/accounts/prove-address.ts) on a fresh store:
 * what the store's transaction removed from a never-verified account becomes security events.
 * The transaction itself is test/db/address-proof-store.test.ts.
 */

async function proof (t: Parameters<typeof testStore>[0]) {
  const store = await testStore(t)
  const clock = testClock()
  const securityEvents = recordingEvents()
  const proveAddress = createProveAddress({ store, clock, securityEvents })
  const now = new Date(clock.now())
  const user = await store.createUser({ firstName: 'S', lastName: 'Q', username: null, email: 'owner@example.test', passwordHash: 'squatter-hash' })
  await store.createSession({ id: 'squatter-session', userId: user.id, userAgent: null, ip: null }, now)
  await store.createRefreshToken({ tokenHash: 'squatter-refresh', userId: user.id, familyId: 'squatter-session', expiresAt: new Date(now.getTime() + 3_600_000) })
  await store.createPasskey({ id: 'passkey-1', userId: user.id, credentialId: 'credential-1', publicKey: 'key', counter: 0, transports: [], name: 'Squatter' }, now)
  await store.saveTotpSecret(user.id, 'SECRET', now)
  await store.confirmTotp(user.id, 1, ['code-1'], now)
  await store.linkIdentity({ provider: 'elsewhere', subject: 'squatter', userId: user.id, email: null }, now)
  return { store, proveAddress, securityEvents, user }
}

t.test('a proof of a never-verified address claims the account and records what went', async (t) => {
  const { store, proveAddress, securityEvents, user } = await proof(t)
  t.match(await proveAddress({ userId: user.id, email: user.email }, CLIENT), { outcome: 'proved', sessionsEnded: 1, claimed: { passkeys: [{ id: 'passkey-1' }], totp: true } })
  t.same(securityEvents.events, [
    { type: 'session_revoked', userId: user.id, detail: { reason: 'all sessions ended', sessions: 1 } },
    { type: 'passkey_removed', userId: user.id, detail: { passkey_id: 'passkey-1', name: 'Squatter', reason: 'address_proved' } },
    { type: 'mfa_disabled', userId: user.id, detail: { method: 'totp', reason: 'address_proved' } },
    { type: 'identity_unlinked', userId: user.id, detail: { provider: 'elsewhere', reason: 'address_proved' } }
  ])
  t.match(await store.findUserById(user.id), { emailVerified: true, passwordHash: 'squatter-hash' }, 'the verification link keeps the password')
})

t.test('a second proof finds a verified account: nothing is claimed, nothing recorded', async (t) => {
  const { proveAddress, securityEvents, user } = await proof(t)
  await proveAddress({ userId: user.id, email: user.email }, CLIENT)
  const before = securityEvents.events.length
  t.same(await proveAddress({ userId: user.id, email: user.email }, CLIENT), { outcome: 'proved', sessionsEnded: 0, claimed: undefined })
  t.equal(securityEvents.events.length, before)
})

t.test('a proof of another address than the account\'s proves nothing; an identity of another user is a conflict that writes nothing', async (t) => {
  const { store, proveAddress, securityEvents, user } = await proof(t)
  t.same(await proveAddress({ userId: user.id, email: 'former@example.test' }, CLIENT), { outcome: 'email_changed', sessionsEnded: 0 })
  const other = await store.createUser({ firstName: 'O', lastName: 'T', username: null, email: 'other@example.test', passwordHash: null })
  await store.linkIdentity({ provider: 'test', subject: 'taken', userId: other.id, email: null }, new Date())
  t.same(await proveAddress({ userId: user.id, email: user.email, identity: { provider: 'test', subject: 'taken', email: user.email } }, CLIENT), { outcome: 'identity_conflict' })
  t.same(securityEvents.events, [])
  t.match(await store.findUserById(user.id), { emailVerified: false })
})

import t from 'tap'
import type { AccountStore } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'
import { markEmailVerified } from '../fixtures/factories.js'

/*
 * AccountStore.proveAddress on the backend under test: the claim of a never-verified account
 * (issue 21, findings 1 and 2) is one transaction, and a refused link writes nothing.
 */

const HOUR = 3_600_000

/** A user with everything a squatter could set up: a password, a session, a passkey, TOTP with recovery codes, a pending second step, a passkey ceremony, an identity elsewhere, a mailed link. */
async function squatted (store: AccountStore, email = 'owner@example.test') {
  const now = new Date()
  const user = await store.createUser({ firstName: 'S', lastName: 'Q', username: null, email, passwordHash: 'squatter-hash' })
  await store.createSession({ id: `session-${user.id}`, userId: user.id, userAgent: null, ip: null }, now)
  await store.createRefreshToken({ tokenHash: `refresh-${user.id}`, userId: user.id, familyId: `session-${user.id}`, expiresAt: new Date(now.getTime() + HOUR) })
  await store.createPasskey({ id: `passkey-${user.id}`, userId: user.id, credentialId: `credential-${user.id}`, publicKey: 'key', counter: 0, transports: [], name: 'Squatter' }, now)
  await store.saveTotpSecret(user.id, 'SECRET', now)
  await store.confirmTotp(user.id, 1, ['code-1', 'code-2'], now)
  await store.createMfaChallenge({ tokenHash: `mfa-${user.id}`, userId: user.id, expiresAt: new Date(now.getTime() + HOUR) }, now, 5)
  await store.createWebauthnChallenge({ challengeHash: `ceremony-${user.id}`, purpose: 'registration', userId: user.id, expiresAt: new Date(now.getTime() + HOUR) }, now)
  await store.linkIdentity({ provider: 'elsewhere', subject: `squatter-${user.id}`, userId: user.id, email: null }, now)
  await store.issueOneTimeToken({ tokenHash: `reset-${user.id}`, userId: user.id, purpose: 'reset_password', email, expiresAt: new Date(now.getTime() + HOUR) }, now, { liveLimit: 3 })
  return user
}

async function setUp (store: AccountStore, userId: number) {
  const now = new Date()
  return {
    passwordHash: (await store.findUserById(userId))?.passwordHash,
    emailVerified: (await store.findUserById(userId))?.emailVerified,
    passkeys: (await store.listPasskeys(userId)).length,
    totp: await store.findTotp(userId) !== undefined,
    recoveryCodes: await store.countRecoveryCodes(userId),
    mfaChallenge: await store.findMfaChallenge(`mfa-${userId}`) !== undefined,
    identities: (await store.listIdentities(userId)).map(identity => `${identity.provider}:${identity.subject}`).sort(),
    resetLinkLive: (await store.findOneTimeToken(`reset-${userId}`))?.usedAt === null,
    session: await store.sessionState(`session-${userId}`, now)
  }
}

t.test('a verified provider sign-in claims a never-verified account in one go, and links the identity', async (t) => {
  const store = await testStore(t)
  const user = await squatted(store)
  const since = new Date(Date.now() - 1000)
  const outcome = await store.proveAddress({ userId: user.id, email: user.email, identity: { provider: 'test', subject: 'owner', email: user.email } }, new Date())
  t.same(outcome, {
    outcome: 'proved',
    sessionsEnded: 1,
    claimed: { passwordCleared: true, passkeys: [{ id: `passkey-${user.id}`, name: 'Squatter' }], totp: true, identities: ['elsewhere'] }
  })
  t.same(await setUp(store, user.id), {
    passwordHash: null,
    emailVerified: true,
    passkeys: 0,
    totp: false,
    recoveryCodes: 0,
    mfaChallenge: false,
    identities: ['test:owner'],
    resetLinkLive: false,
    session: 'revoked'
  })
  t.equal(await store.consumeWebauthnChallenge(`ceremony-${user.id}`, 'registration', new Date(), user.id), false, 'the passkey ceremony under way is void')
  t.match(await store.readRevocations(0, since, 10), [{ sessionId: `session-${user.id}`, userId: user.id }], 'the revocation log says so (access tokens stop)')
})

t.test('a link that cannot be made writes nothing: the identity check comes first', async (t) => {
  const store = await testStore(t)
  const user = await squatted(store)
  await store.linkIdentity({ provider: 'test', subject: 'someone-else', userId: user.id, email: null }, new Date())
  const before = await setUp(store, user.id)
  t.same(await store.proveAddress({ userId: user.id, email: user.email, identity: { provider: 'test', subject: 'owner', email: null } }, new Date()), { outcome: 'identity_conflict' },
    'another identity at that provider')
  const other = await store.createUserWithIdentity({ firstName: 'O', lastName: 'O', username: null, email: 'other@example.test', passwordHash: null },
    { provider: 'corp', subject: 'taken', email: null }, new Date())
  t.same(await store.proveAddress({ userId: user.id, email: user.email, identity: { provider: 'corp', subject: 'taken', email: null } }, new Date()), { outcome: 'identity_conflict' },
    'another user\'s identity')
  t.same(await setUp(store, user.id), before, 'the account is as it was')
  t.equal((await store.findIdentity('corp', 'taken'))?.userId, other.id)
})

t.test('a reset claims a never-verified account with the new password; a verified one keeps its second factors', async (t) => {
  const store = await testStore(t)
  const unverified = await squatted(store, 'a@example.test')
  const claim = await store.proveAddress({ userId: unverified.id, email: unverified.email, passwordHash: 'owner-hash' }, new Date())
  t.match(claim, { outcome: 'proved', sessionsEnded: 1, claimed: { passwordCleared: false, totp: true, identities: ['elsewhere'] } })
  t.match(await setUp(store, unverified.id), { passwordHash: 'owner-hash', emailVerified: true, passkeys: 0, totp: false, identities: [], session: 'revoked' })

  const verified = await squatted(store, 'b@example.test')
  await markEmailVerified(store, verified.id)
  t.same(await store.proveAddress({ userId: verified.id, email: verified.email, passwordHash: 'new-hash' }, new Date()), { outcome: 'proved', sessionsEnded: 1, claimed: undefined })
  t.match(await setUp(store, verified.id), {
    passwordHash: 'new-hash', passkeys: 1, totp: true, recoveryCodes: 2, identities: [`elsewhere:squatter-${verified.id}`], resetLinkLive: false, session: 'revoked'
  }, 'the password is new, the sessions end, the second factors stay')

  const changed = await squatted(store, 'c@example.test')
  await store.updateUser(changed.id, { email: 'changed@example.test' })
  t.same(await store.proveAddress({ userId: changed.id, email: 'c@example.test', passwordHash: 'hash-3' }, new Date()), { outcome: 'email_changed', sessionsEnded: 1 },
    'a link mailed to a former address proves nothing about the current one')
  t.match(await setUp(store, changed.id), { passwordHash: 'hash-3', emailVerified: false, passkeys: 1, totp: true })
})

t.test('the verification link keeps the password; it ends the sessions only when it removed something', async (t) => {
  const store = await testStore(t)
  const user = await squatted(store)
  t.match(await store.proveAddress({ userId: user.id, email: user.email }, new Date()), { outcome: 'proved', sessionsEnded: 1, claimed: { passwordCleared: false, totp: true } })
  t.match(await setUp(store, user.id), { passwordHash: 'squatter-hash', emailVerified: true, passkeys: 0, totp: false, identities: [], session: 'revoked' })

  const plain = await store.createUser({ firstName: 'P', lastName: 'P', username: null, email: 'plain@example.test', passwordHash: 'hash' })
  await store.createSession({ id: 'plain-session', userId: plain.id, userAgent: null, ip: null }, new Date())
  await store.createRefreshToken({ tokenHash: 'plain-refresh', userId: plain.id, familyId: 'plain-session', expiresAt: new Date(Date.now() + HOUR) })
  t.same(await store.proveAddress({ userId: plain.id, email: plain.email }, new Date()),
    { outcome: 'proved', sessionsEnded: 0, claimed: { passwordCleared: false, passkeys: [], totp: false, identities: [] } })
  t.equal(await store.sessionState('plain-session', new Date()), 'live', 'a registrant who set nothing up stays signed in')
  t.equal((await store.findUserById(plain.id))?.emailVerified, true)
  t.same(await store.proveAddress({ userId: 9999, email: 'nobody@example.test' }, new Date()), { outcome: 'email_changed', sessionsEnded: 0 }, 'a user that is gone')
})

t.test('two provider sign-ins racing to claim one account: one links, the other is identity_conflict and undoes nothing of it', async (t) => {
  const store = await testStore(t)
  const user = await squatted(store)
  const proofs = ['first', 'second'].map(subject => store.proveAddress({ userId: user.id, email: user.email, identity: { provider: 'test', subject, email: null } }, new Date()))
  const outcomes = (await Promise.all(proofs)).map(outcome => outcome.outcome).sort()
  t.same(outcomes, ['identity_conflict', 'proved'])
  const linked = await store.listIdentities(user.id)
  t.equal(linked.length, 1, 'one identity, the winner\'s')
  t.match(await setUp(store, user.id), { passwordHash: null, emailVerified: true, passkeys: 0, totp: false, session: 'revoked' }, 'the claim stands')
})

t.test('a mailed code claims a never-verified account, its password and every session included; a verified one keeps its password', async (t) => {
  const store = await testStore(t)
  const unverified = await squatted(store, 'code-a@example.test')
  t.match(await store.proveAddress({ userId: unverified.id, email: unverified.email, clearsPassword: true }, new Date()),
    { outcome: 'proved', sessionsEnded: 1, claimed: { passwordCleared: true, totp: true, identities: ['elsewhere'] } })
  t.same(await setUp(store, unverified.id), {
    passwordHash: null,
    emailVerified: true,
    passkeys: 0,
    totp: false,
    recoveryCodes: 0,
    mfaChallenge: false,
    identities: [],
    resetLinkLive: false,
    session: 'revoked'
  })

  // A registrant who set up only a password and a session: both go all the same.
  const plain = await store.createUser({ firstName: 'P', lastName: 'P', username: null, email: 'code-b@example.test', passwordHash: 'hash' })
  await store.createSession({ id: 'code-b-session', userId: plain.id, userAgent: null, ip: null }, new Date())
  await store.createRefreshToken({ tokenHash: 'code-b-refresh', userId: plain.id, familyId: 'code-b-session', expiresAt: new Date(Date.now() + HOUR) })
  t.same(await store.proveAddress({ userId: plain.id, email: plain.email, clearsPassword: true }, new Date()),
    { outcome: 'proved', sessionsEnded: 1, claimed: { passwordCleared: true, passkeys: [], totp: false, identities: [] } })
  t.equal(await store.sessionState('code-b-session', new Date()), 'revoked')

  const verified = await squatted(store, 'code-c@example.test')
  await markEmailVerified(store, verified.id)
  t.same(await store.proveAddress({ userId: verified.id, email: verified.email, clearsPassword: true }, new Date()), { outcome: 'proved', sessionsEnded: 0, claimed: undefined })
  t.match(await setUp(store, verified.id), { passwordHash: 'squatter-hash', passkeys: 1, totp: true, session: 'live' }, 'the owner proved it before: everything stays')
})

t.test('an invitation accepted in a session claims the account but keeps that session; the others end', async (t) => {
  const store = await testStore(t)
  const user = await squatted(store)
  const now = new Date()
  await store.createSession({ id: 'accepting', userId: user.id, userAgent: null, ip: null }, now)
  await store.createRefreshToken({ tokenHash: 'accepting-refresh', userId: user.id, familyId: 'accepting', expiresAt: new Date(now.getTime() + HOUR) })
  t.match(await store.proveAddress({ userId: user.id, email: user.email, keepSessionId: 'accepting' }, now), { outcome: 'proved', sessionsEnded: 1, claimed: { totp: true } })
  t.match(await setUp(store, user.id), { emailVerified: true, passkeys: 0, totp: false, session: 'revoked' }, 'the other session ended')
  t.equal(await store.sessionState('accepting', now), 'live', 'the accepting session stays')
})

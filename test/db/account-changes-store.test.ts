import t from 'tap'
import { DuplicateValueError, type AccountStore } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

// The store's rules that write several rows do it in one transaction: all of it, or (when one write
// fails) none of it. Runs on the backend under test (TEST_STORE), as every file of test/db does.

const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'old hash' })
const HOUR = 3_600_000

async function userWithSessions (store: AccountStore, email: string, now: Date) {
  const user = await store.createUser(newUser(email))
  for (const id of ['kept', 'other-1', 'other-2'].map(name => `${email}-${name}`)) {
    await store.startSession({ id, userId: user.id, userAgent: null, ip: null }, { tokenHash: `${id}-token`, userId: user.id, familyId: id, expiresAt: new Date(now.getTime() + HOUR) }, now)
  }
  await store.issueOneTimeToken({ tokenHash: `${email}-reset`, userId: user.id, purpose: 'reset_password', email, expiresAt: new Date(now.getTime() + HOUR) }, now, { liveLimit: 3 })
  return user
}

t.test('startSession writes the session and its first refresh token together', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  const user = await userWithSessions(store, 'ada@example.com', now)
  t.equal((await store.findRefreshToken('ada@example.com-kept-token'))?.familyId, 'ada@example.com-kept')
  t.equal((await store.findSession('ada@example.com-kept'))?.userId, user.id)
  await t.rejects(store.startSession({ id: 'ada@example.com-kept', userId: user.id, userAgent: null, ip: null },
    { tokenHash: 'never-stored', userId: user.id, familyId: 'ada@example.com-kept', expiresAt: new Date(now.getTime() + HOUR) }, now),
  'a session id used twice is refused')
  t.equal(await store.findRefreshToken('never-stored'), undefined, 'and its token is not written either')
})

t.test('changePassword sets the hash, voids mailed tokens, ends the other sessions and keeps the one that asked', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  const user = await userWithSessions(store, 'ada@example.com', now)
  const later = new Date(now.getTime() + 1000)
  t.equal(await store.changePassword(user.id, 'new hash', later, 'ada@example.com-kept'), 2, 'two other sessions ended')
  t.equal((await store.findUserById(user.id))?.passwordHash, 'new hash')
  t.equal(await store.sessionState('ada@example.com-kept', later), 'live')
  t.equal(await store.sessionState('ada@example.com-other-1', later), 'revoked')
  t.equal(await store.sessionState('ada@example.com-other-2', later), 'revoked')
  t.not((await store.findOneTimeToken('ada@example.com-reset'))?.usedAt, null, 'the mailed reset link is void')
  t.same((await store.findSession('ada@example.com-kept'))?.authenticatedAt, later, 'the session that proved the password is fresh')
  const logged = await store.readRevocations(0, now, 10)
  t.same(logged.map(row => row.sessionId).sort(), ['ada@example.com-other-1', 'ada@example.com-other-2'], 'each ended session is in the revocation log')
})

t.test('changeEmail updates the user, voids mailed tokens, queues the notice and ends every session, in one step', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  const user = await userWithSessions(store, 'ada@example.com', now)
  const notice = { to: 'ada@example.com', subject: 'Your email address was changed', text: 'It is now augusta@example.com' }
  const { user: changed, sessionsEnded } = await store.changeEmail(user.id, { email: 'augusta@example.com', emailVerified: false, emailVerifiedAt: null }, now, notice)
  t.equal(changed?.email, 'augusta@example.com')
  t.equal(sessionsEnded, 3)
  t.equal(await store.sessionState('ada@example.com-kept', now), 'revoked')
  t.not((await store.findOneTimeToken('ada@example.com-reset'))?.usedAt, null)
  t.equal(await store.countPendingMails(), 1, 'the notice waits in the outbox')
})

t.test('a changeEmail to a taken address throws and writes nothing at all', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  await store.createUser(newUser('taken@example.com'))
  const user = await userWithSessions(store, 'ada@example.com', now)
  const notice = { to: 'ada@example.com', subject: 'Your email address was changed', text: '…' }
  await t.rejects(store.changeEmail(user.id, { email: 'taken@example.com' }, now, notice), DuplicateValueError)
  t.equal((await store.findUserById(user.id))?.email, 'ada@example.com')
  t.equal(await store.sessionState('ada@example.com-other-1', now), 'live', 'no session ended')
  t.equal((await store.findOneTimeToken('ada@example.com-reset'))?.usedAt, null, 'the reset link still works')
  t.equal(await store.countPendingMails(), 0, 'no notice queued')
})

t.test('changeEmail of a user that is gone changes nothing', async (t) => {
  const store = await testStore(t)
  const result = await store.changeEmail(4242, { email: 'x@example.com' }, new Date(), { to: 'x@example.com', subject: 's', text: 't' })
  t.same(result, { sessionsEnded: 0 })
  t.equal(await store.countPendingMails(), 0)
})

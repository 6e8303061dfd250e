import t from 'tap'
import type { AccountStore } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })
const later = (minutes: number) => new Date(Date.now() + minutes * 60_000)

async function session (store: AccountStore, userId: number, id: string, statusIndex: number): Promise<boolean> {
  await store.createSession({ id, userId, userAgent: null, ip: null }, new Date())
  const claimed = await store.claimStatusIndex(id, statusIndex)
  await store.createRefreshToken({ tokenHash: `${id}-token`, userId, familyId: id, expiresAt: later(60) })
  return claimed
}

t.test('every revocation writes one log row per session, with its status index, in seq order', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('ada@example.com'))
  const bob = await store.createUser(newUser('bob@example.com'))
  const claimed = [await session(store, ada.id, 'a1', 1), await session(store, ada.id, 'a2', 2), await session(store, ada.id, 'a3', 3), await session(store, bob.id, 'b1', 4)]
  t.same(claimed, [true, true, true, true], 'each session claims its status index')
  t.equal((await store.findRefreshToken('a2-token'))?.statusIndex, 2, 'a refresh token knows its session\'s index')

  await store.revokeFamily('a1', new Date())
  await store.revokeFamily('a1', new Date())
  t.equal(await store.revokeUserSessions(ada.id, new Date(), { exceptFamilyId: 'a3' }), 1)
  t.ok(await store.deleteUser(bob.id))

  const log = await store.readRevocations(0, new Date(0), 100)
  t.same(log.map(row => [row.sessionId, row.userId, row.statusIndex, row.userDeleted]), [
    ['a1', ada.id, 1, false],
    ['a2', ada.id, 2, false],
    ['b1', bob.id, 4, true],
    [null, bob.id, null, false]
  ], 'revoking a revoked session logs nothing again; a deleted user\'s sessions are marked, and the user\'s deletion is a user-change row')
  t.ok(log[0].seq < log[1].seq && log[1].seq < log[2].seq && log[2].seq < log[3].seq)
  t.same((await store.readRevocations(log[0].seq, new Date(0), 100)).map(row => row.sessionId), ['a2', 'b1', null], 'read after a cursor')
  t.same((await store.readRevocations(0, later(1), 100)).map(row => [row.sessionId, row.userId]), [[null, bob.id]],
    'after a moment only the user-change row, which the database stamps with its own clock and is read whatever the time')

  t.equal(await session(store, ada.id, 'a4', 4), false, 'the index went with its deleted user, and is not handed out while the log sets its bit')
  t.equal(await store.pruneRevocations(later(1)), 4)
  t.same(await store.readRevocations(0, new Date(0), 100), [])
})

t.test('a change of what GET /users/:id shows is a user-change row, written by the database; other changes are not', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('ada@example.com'))
  const bob = await store.createUser({ ...newUser('bob@example.com'), username: 'bob' })
  const userRows = async () => (await store.readRevocations(0, new Date(0), 100)).filter(row => row.sessionId === null).map(row => row.userId)
  t.same(await userRows(), [], 'creating users logs nothing')

  // What the user page does not show: no row.
  await store.setPasswordHash(ada.id, 'another hash', new Date())
  await store.setUserRole(ada.id, 'admin', new Date())
  await store.disableUser(ada.id, new Date())
  await store.enableUser(ada.id, new Date())
  await store.startSession({ id: 's1', userId: ada.id, userAgent: null, ip: null }, { tokenHash: 's1-token', userId: ada.id, familyId: 's1', expiresAt: later(60) }, new Date())
  await store.updateUser(ada.id, { firstName: 'Ada' })
  t.same(await userRows(), [], 'a password, a role, a verification, disabling, a login, or a name set to what it was: none')

  await store.updateUser(ada.id, { firstName: 'Augusta' })
  await store.updateUser(bob.id, { lastName: 'Builder' })
  await store.updateUser(bob.id, { username: 'robert' })
  t.same(await userRows(), [ada.id, bob.id, bob.id], 'a first name, a last name, a username')
  const notice = { to: 'bob@example.com', subject: 'Your email changed', text: 'It did.' }
  await store.changeEmail(bob.id, { email: 'robert@example.com' }, new Date(), notice)
  await store.deleteUser(ada.id)
  t.same(await userRows(), [ada.id, bob.id, bob.id, bob.id, ada.id], 'an email change, a deletion')
  const [newest] = (await store.readRevocations(0, new Date(0), 100)).slice(-1)
  t.same([newest.statusIndex, newest.userDeleted], [null, false])
  t.ok(Math.abs(newest.revokedAt.getTime() - Date.now()) < 60_000, 'stamped with the time it was written')
})

t.test('revokeStatusIndex logs a status index no session holds (a client-credentials token\'s), with no user', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('ada@example.com'))
  await store.revokeStatusIndex('client-token.jti-1', 2_000_000_000, new Date())
  const log = await store.readRevocations(0, new Date(0), 100)
  t.same(log.map(row => [row.sessionId, row.userId, row.statusIndex, row.userDeleted]), [['client-token.jti-1', 0, 2_000_000_000, false]])
  t.equal(await session(store, ada.id, 'a1', 2_000_000_000), false, 'no session takes the index while the log sets its bit')
})

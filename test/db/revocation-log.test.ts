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
    ['b1', bob.id, 4, true]
  ], 'revoking a revoked session logs nothing again; a deleted user\'s sessions are marked')
  t.ok(log[0].seq < log[1].seq && log[1].seq < log[2].seq)
  t.same((await store.readRevocations(log[0].seq, new Date(0), 100)).map(row => row.sessionId), ['a2', 'b1'], 'read after a cursor')
  t.same(await store.readRevocations(0, later(1), 100), [], 'and after a moment')

  t.equal(await session(store, ada.id, 'a4', 4), false, 'the index went with its deleted user, and is not handed out while the log sets its bit')
  t.equal(await store.pruneRevocations(later(1)), 3)
  t.same(await store.readRevocations(0, new Date(0), 100), [])
})

import t from 'tap'
import { openStore } from '../../db/open.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

const newUser = { firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'hash' }

// Rotations asked for in one turn of the event loop commit in one transaction; each must still be judged alone.
t.test('rotations asked for together: each answered on its own, all written, a race still won once', async (t) => {
  const store = await openStore(temporaryDatabase(t))
  t.teardown(() => store.close())
  const user = await store.createUser(newUser)
  const expiresAt = new Date(Date.now() + 60_000)
  for (const family of ['a', 'b', 'c']) await store.createRefreshToken({ tokenHash: `${family}0`, userId: user.id, familyId: family, expiresAt })

  const now = new Date()
  const rotated = await Promise.all([
    store.rotateRefreshToken('a0', { tokenHash: 'a1', userId: user.id, familyId: 'a', expiresAt }, now),
    store.rotateRefreshToken('b0', { tokenHash: 'b1', userId: user.id, familyId: 'b', expiresAt }, now),
    store.rotateRefreshToken('b0', { tokenHash: 'b2', userId: user.id, familyId: 'b', expiresAt }, now),
    store.rotateRefreshToken('unknown', { tokenHash: 'x1', userId: user.id, familyId: 'x', expiresAt }, now),
    // A successor hash that already exists breaks its own rotation, and only that one.
    store.rotateRefreshToken('c0', { tokenHash: 'a1', userId: user.id, familyId: 'c', expiresAt }, now).catch((error: Error) => error)
  ])
  t.same(rotated.slice(0, 4), [true, true, false, false])
  t.type(rotated[4], Error)
  t.match(await store.findRefreshToken('a0'), { replacedBy: 'a1', rotatedAt: Date })
  t.match(await store.findRefreshToken('b0'), { replacedBy: 'b1' })
  t.match(await store.findRefreshToken('a1'), { familyId: 'a', rotatedAt: null })
  t.equal(await store.findRefreshToken('b2'), undefined, 'the losing rotation wrote nothing')
  t.match(await store.findRefreshToken('c0'), { rotatedAt: null, replacedBy: null }, 'the failed rotation was rolled back whole')
})

t.test('a rotation asked for as the store closes fails instead of hanging', async (t) => {
  const store = await openStore(':memory:')
  const user = await store.createUser(newUser)
  const expiresAt = new Date(Date.now() + 60_000)
  await store.createRefreshToken({ tokenHash: 'h0', userId: user.id, familyId: 'f', expiresAt })
  const rotation = store.rotateRefreshToken('h0', { tokenHash: 'h1', userId: user.id, familyId: 'f', expiresAt }, new Date())
  await store.close()
  await t.rejects(rotation)
})

import t from 'tap'
import { openStore } from '../../db/open.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

const newUser = { firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'hash' }
const rules = { refreshTokenTtlMs: 60_000, sessionMaxAgeMs: 3_600_000 }

// Rotations asked for in one turn of the event loop commit in one transaction; each must still be judged alone.
t.test('rotations asked for together: each answered on its own, all written, a race still won once', async (t) => {
  const store = await openStore(temporaryDatabase(t))
  t.teardown(() => store.close())
  const user = await store.createUser(newUser)
  const expiresAt = new Date(Date.now() + 60_000)
  for (const family of ['a', 'b', 'c']) await store.createRefreshToken({ tokenHash: `${family}0`, userId: user.id, familyId: family, expiresAt })

  const now = new Date()
  const rotate = (previousHash: string, successorHash: string) => store.rotateRefreshToken({ previousHash, successorHash, now, ...rules })
  const rotated = await Promise.all([
    rotate('a0', 'a1'),
    rotate('b0', 'b1'),
    rotate('b0', 'b2'),
    rotate('unknown', 'x1'),
    // A successor hash that already exists breaks its own rotation, and only that one.
    rotate('c0', 'a1').catch((error: Error) => error)
  ])
  t.same(rotated.slice(0, 4).map(outcome => (outcome as { familyId?: string } | undefined)?.familyId), ['a', 'b', undefined, undefined])
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
  const rotation = store.rotateRefreshToken({ previousHash: 'h0', successorHash: 'h1', now: new Date(), ...rules })
  await store.close()
  await t.rejects(rotation)
})

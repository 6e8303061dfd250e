import t from 'tap'
import type { LockoutPolicy } from '../../../core/lockout/failure-store.js'
import { memoryFailureStore } from '../../../core/lockout/memory-failure-store.js'
import { testClock } from '../../fixtures/clock.js'

const policy: LockoutPolicy = { threshold: 3, firstMs: 1000, maxMs: 4000 }

t.test('the in-memory failure store reserves, refuses while locked, forgets after its time, and evicts the key with the fewest failures first when full', async (t) => {
  const store = memoryFailureStore(2)
  const now = Date.now()
  t.same(await store.reserve('a', now, 60_000, policy), { reserved: true, count: 1, previous: null })
  t.same(await store.reserve('a', now + 5, 60_000, policy), { reserved: true, count: 2, previous: { count: 1, lastFailureAt: now } })
  t.same(await store.reserve('a', now + 6, 60_000, policy), { reserved: true, count: 3, previous: { count: 2, lastFailureAt: now + 5 } })
  t.same(await store.reserve('a', now + 7, 60_000, policy), { reserved: false, lockedUntil: now + 1006 }, 'locked: nothing more is counted')
  t.same(await store.get('a'), { count: 3, lastFailureAt: now + 6 })
  t.same(await store.reserve('a', now + 1006, 60_000, policy), { reserved: true, count: 4, previous: { count: 3, lastFailureAt: now + 6 } }, 'the lockout over, one more attempt')
  await store.release('a', { count: 4, at: now + 1006, previous: { count: 3, lastFailureAt: now + 6 } })
  t.same(await store.get('a'), { count: 3, lastFailureAt: now + 6 }, 'released: the attempt was not judged, and the state is as before it')

  await store.reserve('gone', now - 120_000, 1000, policy)
  t.equal(await store.get('gone'), undefined, 'expired')
  await store.reserve('b', now, 60_000, policy)
  t.equal(await store.get('gone'), undefined, 'full: the expired key went first')
  await store.reserve('c', now, 60_000, policy)
  t.equal(await store.get('b'), undefined, 'full again: the stalest key with the fewest failures was evicted')
  t.same(await store.get('a'), { count: 3, lastFailureAt: now + 6 }, 'the account with more failures stays counted')
  t.same(await store.get('c'), { count: 1, lastFailureAt: now })
  await store.delete('c')
  t.equal(await store.get('c'), undefined)
})

t.test('parallel reservations: exactly the threshold is reserved, the rest refused', async (t) => {
  const store = memoryFailureStore()
  const results = await Promise.all(Array.from({ length: 50 }, () => store.reserve('account', Date.now(), 60_000, policy)))
  t.equal(results.filter(result => result.reserved).length, 3)
  t.equal((await store.get('account'))?.count, 3)
})

t.test('the in-memory failure store forgets a key by the clock it is given', async (t) => {
  const clock = testClock()
  const store = memoryFailureStore(10, clock)
  await store.reserve('a', clock.now(), 1000, policy)
  clock.advance(999)
  t.same(await store.get('a'), { count: 1, lastFailureAt: clock.now() - 999 })
  clock.advance(1)
  t.equal(await store.get('a'), undefined, 'gone once its time has passed')
})

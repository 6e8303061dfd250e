import t from 'tap'
import { memoryFailureStore } from '../../plugins/app/login-throttle.js'

t.test('the in-memory failure store counts, forgets after its time, and evicts the stalest key when full', async (t) => {
  const store = memoryFailureStore(2)
  const now = Date.now()
  t.same(await store.increment('a', now, 60_000), { count: 1, lastFailureAt: now })
  t.same(await store.increment('a', now + 5, 60_000), { count: 2, lastFailureAt: now + 5 })
  t.same(await store.increment('gone', now - 120_000, 1000), { count: 1, lastFailureAt: now - 120_000 })
  t.equal(await store.get('gone'), undefined, 'expired')
  await store.increment('b', now, 60_000)
  await store.increment('c', now, 60_000)
  t.equal(await store.get('a'), undefined, 'the stalest key was evicted')
  t.same(await store.get('c'), { count: 1, lastFailureAt: now })
  await store.delete('c')
  t.equal(await store.get('c'), undefined)
})

t.test('parallel failures are all counted', async (t) => {
  const store = memoryFailureStore()
  await Promise.all(Array.from({ length: 50 }, () => store.increment('account', Date.now(), 60_000)))
  t.equal((await store.get('account'))?.count, 50)
})

import t from 'tap'
import { lockedUntil, type LockoutPolicy } from '../../core/lockout/failure-store.js'
import { MAX_TRACKED_KEYS, memoryFailureStore } from '../../core/lockout/memory-failure-store.js'

/*
 * Finding 5 of the second review (second half): without Redis the lockout lives in a table of at
 * most 100,000 keys that dropped the stalest key when full, so 100,000 logins with other emails
 * (one failure each) wiped a victim's lockout and failures. A full table now drops the stalest key
 * among those with the fewest failures: a flood of new keys only pushes out keys like itself.
 */

const policy: LockoutPolicy = { threshold: 5, firstMs: 30_000, maxMs: 15 * 60_000 }
const ttlMs = 16 * 60_000

t.test(`${MAX_TRACKED_KEYS} failed logins of other emails do not reset a locked account's lockout, nor its failures so far`, async (t) => {
  const store = memoryFailureStore()
  const now = Date.now()
  for (let failure = 0; failure < policy.threshold; failure++) await store.reserve('login:victim@example.com', now, ttlMs, policy)
  for (let failure = 0; failure < 3; failure++) await store.reserve('login:half-guessed@example.com', now, ttlMs, policy)
  const locked = await store.get('login:victim@example.com')
  t.ok(lockedUntil(locked as never, policy) > now, 'locked')

  for (let other = 0; other < MAX_TRACKED_KEYS; other++) await store.reserve(`login:flood-${other}@example.com`, now + 1, ttlMs, policy)

  t.same(await store.get('login:victim@example.com'), locked, 'still locked, with its failures')
  t.same(await store.reserve('login:victim@example.com', now + 2, ttlMs, policy), { reserved: false, lockedUntil: lockedUntil(locked as never, policy) }, 'the next guess is refused')
  t.equal((await store.get('login:half-guessed@example.com'))?.count, 3, 'failures below the threshold are kept too')
  t.equal(await store.get('login:flood-0@example.com'), undefined, 'the flood pushed out its own oldest keys')
  t.same(await store.get(`login:flood-${MAX_TRACKED_KEYS - 1}@example.com`), { count: 1, lastFailureAt: now + 1 })
})

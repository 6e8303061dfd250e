import t from 'tap'
import { lockedUntil, type LockoutPolicy } from '../../../core/lockout/failure-store.js'

const policy: LockoutPolicy = { threshold: 3, firstMs: 1000, maxMs: 4000 }

t.test('lockedUntil: locked from the threshold on, doubling per further failure up to the maximum', async (t) => {
  t.equal(lockedUntil({ count: 2, lastFailureAt: 100 }, policy), 0)
  t.equal(lockedUntil({ count: 3, lastFailureAt: 100 }, policy), 1100)
  t.equal(lockedUntil({ count: 4, lastFailureAt: 100 }, policy), 2100)
  t.equal(lockedUntil({ count: 9, lastFailureAt: 100 }, policy), 4100)
})

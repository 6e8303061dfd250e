import type { Redis } from 'ioredis'
import t from 'tap'
import { loadConfig } from '../../../core/config.js'
import type { FailureStore } from '../../../core/lockout/failure-store.js'
import { createLoginThrottle, type LoginThrottleDependencies } from '../../../core/lockout/login-throttle.js'
import { memoryFailureStore } from '../../../core/lockout/memory-failure-store.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { testClock } from '../../fixtures/clock.js'

// 3 failures lock for 30 s, doubling per further failure up to 2 minutes.
const { rateLimit } = loadConfig({
  NODE_ENV: 'test', DATABASE_URL: ':memory:', RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '3', RATE_LIMIT_LOCKOUT: '30s', RATE_LIMIT_LOCKOUT_MAX: '2m'
})

function throttle (dependencies: Partial<LoginThrottleDependencies> = {}, options: { enabled?: boolean, failureStore?: FailureStore } = {}) {
  const clock = testClock()
  const loginThrottle = createLoginThrottle(
    { clock, log: silentLogger, ...dependencies },
    { rateLimit: { ...rateLimit, enabled: options.enabled ?? true }, failureStore: options.failureStore }
  )
  return { clock, loginThrottle }
}

t.test('an account locks after RATE_LIMIT_LOGIN_FAILURES failures, the right password included, until its lockout has passed', async (t) => {
  const { clock, loginThrottle } = throttle()
  t.match(await loginThrottle.reserve('victim@example.com'), { failures: 1, locks: false })
  t.match(await loginThrottle.reserve('victim@example.com'), { failures: 2, locks: false })
  t.match(await loginThrottle.reserve('victim@example.com'), { failures: 3, locks: true }, 'the third failure locks')
  await t.rejects(loginThrottle.reserve('victim@example.com'), { code: 'RATE_LIMITED', retryAfter: 30 })
  t.match(await loginThrottle.reserve('other@example.com'), { failures: 1 }, 'other accounts are counted apart')

  clock.advance(29_500)
  await t.rejects(loginThrottle.reserve('victim@example.com'), { code: 'RATE_LIMITED', retryAfter: 1 }, 'Retry-After rounds up')
  clock.advance(500)
  t.match(await loginThrottle.reserve('victim@example.com'), { failures: 4, locks: true }, 'over: one more attempt')
  await t.rejects(loginThrottle.reserve('victim@example.com'), { code: 'RATE_LIMITED', retryAfter: 60 }, 'its failure doubles the lockout')
})

t.test('a right password forgets the account\'s failures', async (t) => {
  const { loginThrottle } = throttle()
  await loginThrottle.reserve('owner@example.com')
  await loginThrottle.reserve('owner@example.com')
  await loginThrottle.succeeded('owner@example.com')
  t.match(await loginThrottle.reserve('owner@example.com'), { failures: 1, locks: false })
})

t.test('a released attempt leaves the count and the lockout as they were before it', async (t) => {
  const { clock, loginThrottle } = throttle()
  for (let failure = 0; failure < 3; failure++) await loginThrottle.reserve('victim@example.com')
  clock.advance(30_000)
  // The owner's right password of an account with a second factor: reserved, then given back.
  const owners = await loginThrottle.reserve('victim@example.com')
  await loginThrottle.release('victim@example.com', owners)
  t.match(await loginThrottle.reserve('victim@example.com'), { failures: 4 }, 'the stranger\'s three failures stay, the owner\'s is gone')
  await loginThrottle.release('victim@example.com', { failures: 0, locks: false })
  await t.rejects(loginThrottle.reserve('victim@example.com'), { code: 'RATE_LIMITED' }, 'a reservation that counted nothing gives nothing back')
})

t.test('with RATE_LIMIT_ENABLED=false nothing is counted or locked', async (t) => {
  const counted: string[] = []
  const failureStore = { ...memoryFailureStore(), reserve: async () => { counted.push('reserve'); throw new Error('not used') } }
  const { loginThrottle } = throttle({}, { enabled: false, failureStore })
  for (let attempt = 0; attempt < 10; attempt++) t.same(await loginThrottle.reserve('anyone@example.com'), { failures: 0, locks: false })
  t.same(counted, [])
})

t.test('the counts live in the store given, else in the service\'s Redis, which fails open with one warning', async (t) => {
  const keys: string[] = []
  const memory = memoryFailureStore()
  const given: FailureStore = { ...memory, reserve: async (key, ...rest) => { keys.push(key); return await memory.reserve(key, ...rest) } }
  await throttle({}, { failureStore: given }).loginThrottle.reserve('owner@example.com')
  t.same(keys, ['login:owner@example.com'], 'one key per account')

  const warnings: string[] = []
  const log: Logger = { ...silentLogger, warn: (_object: object | string, message?: string) => { warnings.push(message ?? '') } }
  const away = { eval: async () => { throw new Error('connection refused') } } as unknown as Redis
  const { loginThrottle } = throttle({ redis: away, log })
  for (let attempt = 0; attempt < 5; attempt++) t.match(await loginThrottle.reserve('owner@example.com'), { failures: 0, locks: false })
  t.equal(warnings.length, 1, 'Redis was asked, and its absence warned once')
})

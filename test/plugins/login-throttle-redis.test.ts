import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import type { LockoutPolicy } from '../../core/lockout/failure-store.js'
import { REDIS_FAILURES_NAMESPACE, redisFailureStore } from '../../core/lockout/redis-failure-store.js'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { registerUser } from '../fixtures/factories.js'

/** A Redis for the tests, e.g. redis://127.0.0.1:6379 (.ci/run sets it when one answers). */
const TEST_REDIS_URL = process.env.TEST_REDIS_URL
// The counters do not depend on the account store: one pass (SQLite) is enough.
const otherPass = process.env.TEST_STORE === 'postgres' && 'login-failure counters are tested in the SQLite pass'
const skip = otherPass || (TEST_REDIS_URL === undefined && 'Redis tests skipped: TEST_REDIS_URL not set')

/** A client with a prefix of its own (other runs on the same Redis count apart), and its keys deleted at teardown. */
async function redisClient (t: Test, url = TEST_REDIS_URL as string) {
  const keyPrefix = `test-${randomBytes(6).toString('hex')}:`
  // Configured as plugins/external/redis.ts configures fastify.redis.
  const redis = new Redis(url, { keyPrefix, connectTimeout: 500, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
  redis.on('error', () => {})
  await redis.connect().catch(() => {})
  t.teardown(async () => {
    // ioredis does not prefix the pattern of KEYS, and DEL prefixes what it is given.
    if (redis.status === 'ready') {
      const keys = (await redis.keys(`${keyPrefix}*`)).map(key => key.slice(keyPrefix.length))
      if (keys.length > 0) await redis.del(...keys)
    }
    redis.disconnect()
  })
  return { redis, keyPrefix }
}

function warningsLog () {
  const warnings: string[] = []
  const log = { warn: (_object: unknown, message: string) => { warnings.push(message) } } as unknown as FastifyBaseLogger
  return { log, warnings }
}

const policy: LockoutPolicy = { threshold: 3, firstMs: 1000, maxMs: 4000 }

t.test('the Redis failure store reserves atomically, refuses while locked, expires, and deletes', { skip }, async (t) => {
  const { redis, keyPrefix } = await redisClient(t)
  const store = redisFailureStore(redis, warningsLog().log)
  const now = Date.now()
  t.equal(await store.get('login:nobody'), undefined)
  t.same(await store.reserve('login:a', now, 60_000, policy), { reserved: true, count: 1, previous: null })
  t.same(await store.reserve('login:a', now + 5, 60_000, policy), { reserved: true, count: 2, previous: { count: 1, lastFailureAt: now } })
  t.same(await store.get('login:a'), { count: 2, lastFailureAt: now + 5 })
  const ttl = await redis.pttl(`${REDIS_FAILURES_NAMESPACE}login:a`)
  t.ok(ttl > 55_000 && ttl <= 60_000, `the key expires with its time (pttl ${ttl})`)
  t.same(await redis.keys(`${keyPrefix}*`), [`${keyPrefix}${REDIS_FAILURES_NAMESPACE}login:a`], 'one key, under the prefix')
  t.same(await store.reserve('login:a', now + 6, 60_000, policy), { reserved: true, count: 3, previous: { count: 2, lastFailureAt: now + 5 } })
  t.same(await store.reserve('login:a', now + 7, 60_000, policy), { reserved: false, lockedUntil: now + 1006 }, 'locked: refused, not counted')
  await store.release('login:a', { count: 3, at: now + 6, previous: { count: 2, lastFailureAt: now + 5 } })
  t.same(await store.get('login:a'), { count: 2, lastFailureAt: now + 5 }, 'a released attempt is given back: the state before it')

  const results = await Promise.all(Array.from({ length: 50 }, () => store.reserve('login:parallel', Date.now(), 60_000, policy)))
  t.equal(results.filter(result => result.reserved).length, 3, 'of 50 parallel attempts, exactly the threshold is reserved')
  t.equal((await store.get('login:parallel'))?.count, 3)

  await store.reserve('login:short', Date.now(), 50, policy)
  await new Promise(resolve => setTimeout(resolve, 120))
  t.equal(await store.get('login:short'), undefined, 'forgotten after its time')
  await store.delete('login:a')
  t.equal(await store.get('login:a'), undefined)
})

const login = (server: FastifyInstance, email: string, password: string) =>
  server.inject({ method: 'POST', url: '/auth/login', payload: { email, password } })

t.test('with REDIS_URL, two instances share one lockout: failures on one lock the account on the other', { skip }, async (t) => {
  const env = {
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_LOGIN_FAILURES: '3',
    RATE_LIMIT_LOCKOUT: '30s',
    REDIS_URL: TEST_REDIS_URL as string,
    REDIS_KEY_PREFIX: `test-${randomBytes(6).toString('hex')}:`,
    // Two instances of one service: one database too.
    DATABASE_URL: await testDatabaseUrl(t, { persistent: true })
  }
  const first = await build(t, { env })
  const second = await build(t, { env })
  const user = await registerUser(first, 'cookie')
  t.teardown(() => first.redis.del(`${REDIS_FAILURES_NAMESPACE}login:${user.email}`))

  t.equal((await login(first, user.email, 'wrong guess 1')).statusCode, 401)
  t.equal((await login(second, user.email, 'wrong guess 2')).statusCode, 401)
  t.equal((await login(first, user.email, 'wrong guess 3')).statusCode, 401)
  const locked = await login(second, user.email, user.password)
  assertError(t, locked, 429, 'RATE_LIMITED')
  t.equal(locked.headers['retry-after'], '30', 'three failures spread over two instances locked the account on both')
  assertError(t, await login(first, user.email, user.password), 429, 'RATE_LIMITED')
})

t.test('without REDIS_URL, each instance counts failures on its own', { skip: otherPass }, async (t) => {
  const env = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '2', DATABASE_URL: await testDatabaseUrl(t, { persistent: true }) }
  const first = await build(t, { env })
  const second = await build(t, { env })
  const user = await registerUser(first, 'cookie')
  t.equal((await login(first, user.email, 'wrong guess')).statusCode, 401)
  t.equal((await login(second, user.email, 'wrong guess')).statusCode, 401)
  t.equal((await login(second, user.email, user.password)).statusCode, 200, 'one failure on each is under the limit on each')
})

t.test('a Redis that does not answer: the throttle fails open, with one warning', { skip: otherPass }, async (t) => {
  const { redis } = await redisClient(t, 'redis://127.0.0.1:1')
  const { log, warnings } = warningsLog()
  const store = redisFailureStore(redis, log)
  t.equal(await store.get('login:a'), undefined, 'nothing is locked')
  t.same(await store.reserve('login:a', 1000, 60_000, policy), { reserved: true, count: 0, previous: null }, 'reserved without counting')
  await store.delete('login:a')
  t.same(warnings, ['Redis unavailable: failed logins are not counted and no account is locked until it answers'], 'warned once for the outage')

  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '1', REDIS_URL: 'redis://127.0.0.1:1' } })
  const user = await registerUser(server, 'cookie')
  t.equal((await login(server, user.email, 'wrong guess')).statusCode, 401)
  t.equal((await login(server, user.email, 'wrong guess')).statusCode, 401, 'over the limit, but no counter to check it against')
  const started = Date.now()
  t.equal((await login(server, user.email, user.password)).statusCode, 200, 'the right password logs in')
  t.ok(Date.now() - started < 1000, 'without waiting for Redis')
})

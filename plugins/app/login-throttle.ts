import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../../src/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    loginThrottle: LoginThrottle
  }
}

export interface LoginThrottle {
  /** Seconds until the account may try again; 0 when it may try now. Counts nothing, so a check costs no attempt. */
  retryAfterSeconds (account: string): Promise<number>
  /** A wrong password (or unknown email) for the account. */
  recordFailure (account: string): Promise<void>
  /** A successful login clears the account's failures. */
  clear (account: string): Promise<void>
}

/** An account's failed logins so far and when the last one happened (epoch ms). */
export interface FailureState {
  count: number
  lastFailureAt: number
}

/**
 * Where the failure counts live: in memory (one process) without REDIS_URL,
 * in Redis with it, shared by every instance. `increment` must be atomic:
 * parallel guesses must not lose counts.
 */
export interface FailureStore {
  get (key: string): Promise<FailureState | undefined>
  /** Adds one failure at `now`, keeps the key for `ttlMs` from now and returns the new state. */
  increment (key: string, now: number, ttlMs: number): Promise<FailureState>
  delete (key: string): Promise<void>
}

// Bounds memory under a flood of distinct emails: the oldest key is dropped first.
const MAX_TRACKED_KEYS = 100_000

/** The in-memory FailureStore: a Map with expiry, oldest key evicted first when full. */
export function memoryFailureStore (maxKeys = MAX_TRACKED_KEYS): FailureStore {
  const states = new Map<string, FailureState & { expiresAt: number }>()
  const live = (key: string, now: number) => {
    const state = states.get(key)
    if (state !== undefined && state.expiresAt <= now) {
      states.delete(key)
      return undefined
    }
    return state
  }
  return {
    async get (key) {
      const state = live(key, Date.now())
      return state === undefined ? undefined : { count: state.count, lastFailureAt: state.lastFailureAt }
    },
    async increment (key, now, ttlMs) {
      const state = live(key, now) ?? { count: 0, lastFailureAt: now, expiresAt: now }
      state.count += 1
      state.lastFailureAt = now
      state.expiresAt = now + ttlMs
      // Re-inserting keeps the Map in order of last failure, so eviction drops the stalest key.
      states.delete(key)
      if (states.size >= maxKeys) states.delete(states.keys().next().value as string)
      states.set(key, state)
      return { count: state.count, lastFailureAt: state.lastFailureAt }
    },
    async delete (key) {
      states.delete(key)
    }
  }
}

/** Keys of the Redis FailureStore, after REDIS_KEY_PREFIX (the client adds that). */
export const REDIS_FAILURES_NAMESPACE = 'login-failures:'

/**
 * The Redis FailureStore: one hash per account, `count` and `lastFailureAt`,
 * expiring `ttlMs` after the last failure. HINCRBY, HSET and PEXPIRE run in
 * one MULTI, so failures on all instances at once are all counted and the key
 * never outlives its expiry. Redis holds only these counters: when it fails,
 * the throttle fails open (nothing is locked, failures are not counted) and
 * warns once until Redis answers again, as the rate limits do.
 */
export function redisFailureStore (redis: Redis, log: FastifyBaseLogger): FailureStore {
  const keyOf = (key: string) => `${REDIS_FAILURES_NAMESPACE}${key}`
  let failing = false
  /** Runs a command, or answers `fallback` when it fails (fastify.redis fails at once while Redis is away). */
  const attempt = async <T>(command: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      const value = await command()
      failing = false
      return value
    } catch (error) {
      if (!failing) log.warn({ err: error }, 'Redis unavailable: failed logins are not counted and no account is locked until it answers')
      failing = true
      return fallback
    }
  }
  return {
    async get (key) {
      return attempt(async () => {
        const [count, lastFailureAt] = await redis.hmget(keyOf(key), 'count', 'lastFailureAt')
        return count === null || lastFailureAt === null ? undefined : { count: Number(count), lastFailureAt: Number(lastFailureAt) }
      }, undefined)
    },
    async increment (key, now, ttlMs) {
      return attempt(async () => {
        const results = await redis.multi()
          .hincrby(keyOf(key), 'count', 1)
          .hset(keyOf(key), 'lastFailureAt', now)
          .pexpire(keyOf(key), ttlMs)
          .exec()
        // exec() gives [error, reply] per command; any failed command fails the increment.
        const failed = results?.find(([error]) => error !== null)?.[0]
        if (results === null || failed != null) throw failed ?? new Error('MULTI aborted')
        return { count: Number(results[0][1]), lastFailureAt: now }
      }, { count: 0, lastFailureAt: now })
    },
    async delete (key) {
      await attempt(() => redis.del(keyOf(key)), 0)
    }
  }
}

export interface LoginThrottleOptions {
  rateLimit: Config['rateLimit']
  /** Where to keep the counts; by default Redis when the service has REDIS_URL (fastify.redis), else memory. */
  failureStore?: FailureStore
}

/**
 * Locks an account after RATE_LIMIT_LOGIN_FAILURES wrong passwords, whatever
 * address they come from, for RATE_LIMIT_LOCKOUT; each further failure after a
 * lockout doubles it, up to RATE_LIMIT_LOCKOUT_MAX (exponential backoff). During
 * a lockout every login of that account is 429, the right password included, so
 * guessing gains nothing. Only failures count: a user who logs in often is
 * never slowed. Requests per client address are limited apart, by
 * @fastify/rate-limit on the route. Unknown emails are counted like known ones,
 * so the lockout reveals nothing about which accounts exist.
 */
export default fp<LoginThrottleOptions>(async (fastify, { rateLimit, failureStore }) => {
  if (!rateLimit.enabled) {
    fastify.decorate('loginThrottle', { retryAfterSeconds: async () => 0, async recordFailure () {}, async clear () {} })
    return
  }
  // Behind a load balancer a guesser's requests spread over every instance: the lockout must count them all.
  failureStore ??= fastify.hasDecorator('redis') ? redisFailureStore(fastify.redis, fastify.log) : memoryFailureStore()
  const firstLockoutMs = rateLimit.lockoutSeconds * 1000
  const maxLockoutMs = rateLimit.lockoutMaxSeconds * 1000
  // Failures are forgotten once the longest lockout has passed without another.
  const memoryMs = maxLockoutMs + rateLimit.windowSeconds * 1000

  const lockedUntil = ({ count, lastFailureAt }: FailureState) => {
    if (count < rateLimit.loginFailures) return 0
    const doublings = Math.min(count - rateLimit.loginFailures, 30)
    return lastFailureAt + Math.min(firstLockoutMs * 2 ** doublings, maxLockoutMs)
  }
  const keyOf = (account: string) => `login:${account}`

  const loginThrottle: LoginThrottle = {
    async retryAfterSeconds (account) {
      const state = await failureStore.get(keyOf(account))
      const waitMs = state === undefined ? 0 : lockedUntil(state) - Date.now()
      return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0
    },
    async recordFailure (account) {
      await failureStore.increment(keyOf(account), Date.now(), memoryMs)
    },
    async clear (account) {
      await failureStore.delete(keyOf(account))
    }
  }
  fastify.decorate('loginThrottle', loginThrottle)
}, { name: 'login-throttle', dependencies: ['redis'] })

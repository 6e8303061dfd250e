import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../../src/config.js'
import { rateLimited } from '../../src/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    loginThrottle: LoginThrottle
  }
}

export interface LoginThrottle {
  /**
   * Reserves one attempt for the account before its password is checked: counted as a failure
   * at once, so that however many guesses arrive together, at most RATE_LIMIT_LOGIN_FAILURES are
   * judged before the lockout. Throws 429 RATE_LIMITED (with Retry-After) while the account is
   * locked. The caller then calls succeeded() or, when nothing was judged, release().
   */
  reserve (account: string): Promise<Reservation>
  /** The password was right: the account's failures are forgotten. */
  succeeded (account: string): Promise<void>
  /** The password was never judged (503 BUSY): the reservation is given back. */
  release (account: string): Promise<void>
}

/** A reserved attempt: `failures` counts it; `locks` is true when, if it fails, the account is now locked. */
export interface Reservation {
  failures: number
  locks: boolean
}

/** An account's failed logins so far and when the last one happened (epoch ms). */
export interface FailureState {
  count: number
  lastFailureAt: number
}

/** When a failure state locks the account: after `threshold` failures, for firstMs doubling per further failure, up to maxMs. */
export interface LockoutPolicy {
  threshold: number
  firstMs: number
  maxMs: number
}

/** The end of the lockout a failure state is in (epoch ms), or 0 when it is not locked. */
export function lockedUntil ({ count, lastFailureAt }: FailureState, policy: LockoutPolicy): number {
  if (count < policy.threshold) return 0
  const doublings = Math.min(count - policy.threshold, 30)
  return lastFailureAt + Math.min(policy.firstMs * 2 ** doublings, policy.maxMs)
}

/** What reserve gives: the new count, or the end of the lockout that refused it. */
export type ReserveResult = { reserved: true, count: number } | { reserved: false, lockedUntil: number }

/**
 * Where the failure counts live: in memory (one process) without REDIS_URL,
 * in Redis with it, shared by every instance. `reserve` is atomic: the check
 * of the lockout and the increment cannot interleave with another's.
 */
export interface FailureStore {
  get (key: string): Promise<FailureState | undefined>
  /** Unless the key is locked at `now`, adds one failure at `now` and keeps the key for `ttlMs`. */
  reserve (key: string, now: number, ttlMs: number, policy: LockoutPolicy): Promise<ReserveResult>
  /** Takes one failure back (never below zero). */
  release (key: string): Promise<void>
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
    async reserve (key, now, ttlMs, policy) {
      // Synchronous from the check to the increment: nothing else runs in between.
      const state = live(key, now) ?? { count: 0, lastFailureAt: now, expiresAt: now }
      const until = lockedUntil(state, policy)
      if (until > now) return { reserved: false, lockedUntil: until }
      state.count += 1
      state.lastFailureAt = now
      state.expiresAt = now + ttlMs
      // Re-inserting keeps the Map in order of last failure, so eviction drops the stalest key.
      states.delete(key)
      if (states.size >= maxKeys) states.delete(states.keys().next().value as string)
      states.set(key, state)
      return { reserved: true, count: state.count }
    },
    async release (key) {
      const state = states.get(key)
      if (state !== undefined && state.count > 0) state.count -= 1
    },
    async delete (key) {
      states.delete(key)
    }
  }
}

/** Keys of the Redis FailureStore, after REDIS_KEY_PREFIX (the client adds that). */
export const REDIS_FAILURES_NAMESPACE = 'login-failures:'

/**
 * The lockout check and the increment in one script: Redis runs a script
 * atomically, so reservations from every instance at once are judged one by
 * one. The same arithmetic as lockedUntil().
 */
const RESERVE_SCRIPT = `
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
local last = tonumber(redis.call('HGET', KEYS[1], 'lastFailureAt') or '0')
local now, ttl, threshold, first, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if count >= threshold then
  local locked_until = last + math.min(first * 2 ^ math.min(count - threshold, 30), max)
  if locked_until > now then return {0, locked_until} end
end
count = redis.call('HINCRBY', KEYS[1], 'count', 1)
redis.call('HSET', KEYS[1], 'lastFailureAt', now)
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, count}
`
const RELEASE_SCRIPT = `
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
if count > 0 then redis.call('HINCRBY', KEYS[1], 'count', -1) end
return 0
`

/**
 * The Redis FailureStore: one hash per account, `count` and `lastFailureAt`,
 * expiring `ttlMs` after the last failure, changed only by scripts (atomic on
 * the server), so failures on all instances at once are all counted and the
 * key never outlives its expiry. Redis holds only these counters: when it fails,
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
    async reserve (key, now, ttlMs, policy) {
      return attempt(async () => {
        const [reserved, value] = await redis.eval(RESERVE_SCRIPT, 1, keyOf(key), now, ttlMs, policy.threshold, policy.firstMs, policy.maxMs) as [number, number]
        return reserved === 1 ? { reserved: true, count: value } : { reserved: false, lockedUntil: value }
      }, { reserved: true, count: 0 })
    },
    async release (key) {
      await attempt(() => redis.eval(RELEASE_SCRIPT, 1, keyOf(key)), 0)
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
 * a lockout every attempt on that account is 429, the right password included, so
 * guessing gains nothing. Every attempt is reserved (counted) before its
 * password is checked, so guesses sent at once cannot all be judged before the
 * lockout starts; a right password clears the count. Requests per client
 * address are limited apart, by @fastify/rate-limit on the route. Unknown
 * emails are counted like known ones, so the lockout reveals nothing about
 * which accounts exist. Login, re-authentication, password change and account
 * deletion share the count.
 */
export default fp<LoginThrottleOptions>(async (fastify, { rateLimit, failureStore }) => {
  if (!rateLimit.enabled) {
    fastify.decorate('loginThrottle', { reserve: async () => ({ failures: 0, locks: false }), async succeeded () {}, async release () {} })
    return
  }
  // Behind a load balancer a guesser's requests spread over every instance: the lockout must count them all.
  failureStore ??= fastify.hasDecorator('redis') ? redisFailureStore(fastify.redis, fastify.log) : memoryFailureStore()
  const policy: LockoutPolicy = {
    threshold: rateLimit.loginFailures,
    firstMs: rateLimit.lockoutSeconds * 1000,
    maxMs: rateLimit.lockoutMaxSeconds * 1000
  }
  // Failures are forgotten once the longest lockout has passed without another.
  const memoryMs = policy.maxMs + rateLimit.windowSeconds * 1000
  const keyOf = (account: string) => `login:${account}`

  const loginThrottle: LoginThrottle = {
    async reserve (account) {
      const now = Date.now()
      const result = await failureStore.reserve(keyOf(account), now, memoryMs, policy)
      if (!result.reserved) throw rateLimited(Math.max(1, Math.ceil((result.lockedUntil - now) / 1000)))
      return { failures: result.count, locks: result.count >= policy.threshold }
    },
    async succeeded (account) {
      await failureStore.delete(keyOf(account))
    },
    async release (account) {
      await failureStore.release(keyOf(account))
    }
  }
  fastify.decorate('loginThrottle', loginThrottle)
}, { name: 'login-throttle', dependencies: ['redis'] })

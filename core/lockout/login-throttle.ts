import type { Redis } from 'ioredis'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { rateLimited } from '../errors.js'
import type { Logger } from '../logger.js'
import type { FailureStore, LockoutPolicy, ReservedAttempt } from './failure-store.js'
import { MAX_TRACKED_KEYS, memoryFailureStore } from './memory-failure-store.js'
import { redisFailureStore } from './redis-failure-store.js'

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
  /**
   * The attempt was not a failure after all (never judged, or a right password that still needs its second
   * factor): the account's failure state goes back to what it was before reserve(), count and lockout time
   * both, so that a right password never re-arms a lockout a stranger's guesses left behind.
   */
  release (account: string, reservation: Reservation): Promise<void>
}

/** A reserved attempt: `failures` counts it; `locks` is true when, if it fails, the account is now locked. */
export interface Reservation {
  failures: number
  locks: boolean
  /** What release() puts back; undefined when nothing was counted (throttle off, Redis unavailable). */
  readonly attempt?: ReservedAttempt
}

export interface LoginThrottleOptions {
  rateLimit: Config['rateLimit']
  /** Where to keep the counts; by default Redis when the service has REDIS_URL (the `redis` dependency), else memory. */
  failureStore?: FailureStore
}

export interface LoginThrottleDependencies {
  clock: Clock
  log: Logger
  /** The service's Redis (REDIS_URL), when it has one: the counts are then kept there. */
  redis?: Redis
}

/**
 * Locks an account after RATE_LIMIT_LOGIN_FAILURES wrong passwords, whatever
 * address they come from, for RATE_LIMIT_LOCKOUT; each further failure after a
 * lockout doubles it, up to RATE_LIMIT_LOCKOUT_MAX (exponential backoff). During
 * a lockout every attempt on that account is 429, the right password included, so
 * guessing gains nothing. Every attempt is reserved (counted) before its
 * password is checked, so guesses sent at once cannot all be judged before the
 * lockout starts; a right password clears the count, or, for an account with a
 * second factor, gives its reservation back exactly (a stranger's failures stay,
 * but the owner's right password never moves their lockout later). Requests per client
 * address are limited apart, by @fastify/rate-limit on the route. Unknown
 * emails are counted like known ones, so the lockout reveals nothing about
 * which accounts exist. Login, re-authentication, password change and account
 * deletion share the count.
 */
export function createLoginThrottle ({ clock, log, redis }: LoginThrottleDependencies, { rateLimit, failureStore }: LoginThrottleOptions): LoginThrottle {
  if (!rateLimit.enabled) {
    return { reserve: async () => ({ failures: 0, locks: false }), async succeeded () {}, async release () {} }
  }
  // Behind a load balancer a guesser's requests spread over every instance: the lockout must count them all.
  const counts = failureStore ?? (redis !== undefined ? redisFailureStore(redis, log) : memoryFailureStore(MAX_TRACKED_KEYS, clock))
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
      const now = clock.now()
      const result = await counts.reserve(keyOf(account), now, memoryMs, policy)
      if (!result.reserved) throw rateLimited(Math.max(1, Math.ceil((result.lockedUntil - now) / 1000)))
      // Count 0: Redis did not answer, nothing was counted and there is nothing to give back.
      const attempt = result.count > 0 ? { count: result.count, at: now, previous: result.previous } : undefined
      return { failures: result.count, locks: result.count >= policy.threshold, attempt }
    },
    async succeeded (account) {
      await counts.delete(keyOf(account))
    },
    async release (account, { attempt }) {
      if (attempt !== undefined) await counts.release(keyOf(account), attempt)
    }
  }
  return loginThrottle
}

import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { rateLimited } from '../errors.js'

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

/** An account's failed logins so far and when the last one happened (epoch ms). */
export interface FailureState {
  count: number
  lastFailureAt: number
}

/** One counted attempt: the state it made (`count` failures, the last at `at`) and the state before it (null: none). */
export interface ReservedAttempt {
  count: number
  at: number
  previous: FailureState | null
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

/** What reserve gives: the new count and the state before it, or the end of the lockout that refused it. */
export type ReserveResult = { reserved: true, count: number, previous: FailureState | null } | { reserved: false, lockedUntil: number }

/**
 * Where the failure counts live: in memory (one process) without REDIS_URL,
 * in Redis with it, shared by every instance. `reserve` is atomic: the check
 * of the lockout and the increment cannot interleave with another's.
 */
export interface FailureStore {
  get (key: string): Promise<FailureState | undefined>
  /** Unless the key is locked at `now`, adds one failure at `now` and keeps the key for `ttlMs`. */
  reserve (key: string, now: number, ttlMs: number, policy: LockoutPolicy): Promise<ReserveResult>
  /**
   * Takes a reservation back, atomically: when the key is still as that reservation left it, it becomes
   * exactly what it was before (count, time of the last failure, expiry); when another attempt changed it
   * since, only one failure is taken off (never below zero), and the later attempt's time stays.
   */
  release (key: string, attempt: ReservedAttempt): Promise<void>
  delete (key: string): Promise<void>
}

// Bounds memory under a flood of distinct emails (see memoryFailureStore for which key goes first).
export const MAX_TRACKED_KEYS = 100_000

interface Tracked extends FailureState {
  expiresAt: number
  /** The lockout threshold the key was counted under: its tier is its count, up to this. */
  threshold: number
}

/**
 * The in-memory FailureStore: a Map with expiry, bounded to `maxKeys` keys. When full, an expired key
 * goes first; else the stalest key among those with the fewest failures. Keys are kept in tiers by
 * their count (up to the lockout threshold), so a flood of new keys, one failure each, only pushes out
 * keys like themselves: an account being guessed at, or locked, stays counted however many other
 * emails are tried (evicting one would cost a guesser `maxKeys` keys with as many failures as it has).
 */
export function memoryFailureStore (maxKeys = MAX_TRACKED_KEYS): FailureStore {
  const states = new Map<string, Tracked>()
  // Each tier in order of last change (re-inserted on each failure): its first key is its stalest.
  const tiers = new Map<number, Map<string, Tracked>>()
  const tierOf = (state: Tracked) => Math.min(state.count, state.threshold)
  const track = (key: string, state: Tracked) => {
    states.set(key, state)
    const tier = tierOf(state)
    let members = tiers.get(tier)
    if (members === undefined) {
      members = new Map()
      tiers.set(tier, members)
    }
    members.set(key, state)
  }
  const untrack = (key: string) => {
    const state = states.get(key)
    if (state === undefined) return
    states.delete(key)
    const tier = tierOf(state)
    const members = tiers.get(tier)
    members?.delete(key)
    if (members?.size === 0) tiers.delete(tier)
  }
  const evictOne = (now: number) => {
    const stalest = [...tiers.keys()].sort((a, b) => a - b).map(tier => (tiers.get(tier) as Map<string, Tracked>).entries().next().value as [string, Tracked])
    const expired = stalest.find(([, state]) => state.expiresAt <= now)
    untrack((expired ?? stalest[0])[0])
  }
  const live = (key: string, now: number) => {
    const state = states.get(key)
    if (state !== undefined && state.expiresAt <= now) {
      untrack(key)
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
      const state = live(key, now)
      if (state !== undefined) {
        const until = lockedUntil(state, policy)
        if (until > now) return { reserved: false, lockedUntil: until }
      }
      const previous = state === undefined ? null : { count: state.count, lastFailureAt: state.lastFailureAt }
      const next: Tracked = { count: (previous?.count ?? 0) + 1, lastFailureAt: now, expiresAt: now + ttlMs, threshold: policy.threshold }
      // Re-inserting keeps each tier in order of last failure, so eviction drops its stalest key.
      untrack(key)
      if (states.size >= maxKeys) evictOne(now)
      track(key, next)
      return { reserved: true, count: next.count, previous }
    },
    async release (key, { count, at, previous }) {
      const state = states.get(key)
      if (state === undefined) return
      untrack(key)
      if (state.count === count && state.lastFailureAt === at) {
        // As the reservation left it: back to the state before, expiry included (each failure sets it ttl after itself).
        if (previous === null) return
        const ttlMs = state.expiresAt - state.lastFailureAt
        track(key, { ...state, count: previous.count, lastFailureAt: previous.lastFailureAt, expiresAt: previous.lastFailureAt + ttlMs })
        return
      }
      track(key, { ...state, count: Math.max(0, state.count - 1) })
    },
    async delete (key) {
      untrack(key)
    }
  }
}

/** Keys of the Redis FailureStore, after REDIS_KEY_PREFIX (the client adds that). */
export const REDIS_FAILURES_NAMESPACE = 'login-failures:'

/**
 * The lockout check and the increment in one script: Redis runs a script
 * atomically, so reservations from every instance at once are judged one by
 * one. The same arithmetic as lockedUntil(). Answers the new count and the
 * state before (-1, -1 when the key did not exist), for release.
 */
const RESERVE_SCRIPT = `
local exists = redis.call('EXISTS', KEYS[1])
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
local last = tonumber(redis.call('HGET', KEYS[1], 'lastFailureAt') or '0')
local now, ttl, threshold, first, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if count >= threshold then
  local locked_until = last + math.min(first * 2 ^ math.min(count - threshold, 30), max)
  if locked_until > now then return {0, locked_until} end
end
local previous_count, previous_last = -1, -1
if exists == 1 then previous_count, previous_last = count, last end
redis.call('HSET', KEYS[1], 'count', count + 1, 'lastFailureAt', now)
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, count + 1, previous_count, previous_last}
`
/**
 * The reservation given back, atomically: if the key is still as it left it (its count and time), the
 * state before is put back, with the expiry that state had (the key's time to live less the time
 * between the two failures); otherwise one failure is taken off.
 */
const RELEASE_SCRIPT = `
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '-1')
local last = tonumber(redis.call('HGET', KEYS[1], 'lastFailureAt') or '-1')
local reserved_count, reserved_at = tonumber(ARGV[1]), tonumber(ARGV[2])
local previous_count, previous_last = tonumber(ARGV[3]), tonumber(ARGV[4])
if count == reserved_count and last == reserved_at then
  if previous_count < 0 then
    redis.call('DEL', KEYS[1])
    return 1
  end
  local remaining = redis.call('PTTL', KEYS[1]) - (reserved_at - previous_last)
  if remaining <= 0 then
    redis.call('DEL', KEYS[1])
    return 1
  end
  redis.call('HSET', KEYS[1], 'count', previous_count, 'lastFailureAt', previous_last)
  redis.call('PEXPIRE', KEYS[1], remaining)
  return 1
end
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
    async reserve (key, now, ttlMs, policy): Promise<ReserveResult> {
      return attempt(async (): Promise<ReserveResult> => {
        const [reserved, value, previousCount, previousLast] = await redis.eval(
          RESERVE_SCRIPT, 1, keyOf(key), now, ttlMs, policy.threshold, policy.firstMs, policy.maxMs
        ) as [number, number, number?, number?]
        if (reserved !== 1) return { reserved: false, lockedUntil: value }
        const previous = previousCount === undefined || previousCount < 0 ? null : { count: previousCount, lastFailureAt: previousLast as number }
        return { reserved: true, count: value, previous }
      }, { reserved: true, count: 0, previous: null })
    },
    async release (key, { count, at, previous }) {
      await attempt(() => redis.eval(RELEASE_SCRIPT, 1, keyOf(key), count, at, previous?.count ?? -1, previous?.lastFailureAt ?? -1), 0)
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
 * lockout starts; a right password clears the count, or, for an account with a
 * second factor, gives its reservation back exactly (a stranger's failures stay,
 * but the owner's right password never moves their lockout later). Requests per client
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
      // Count 0: Redis did not answer, nothing was counted and there is nothing to give back.
      const attempt = result.count > 0 ? { count: result.count, at: now, previous: result.previous } : undefined
      return { failures: result.count, locks: result.count >= policy.threshold, attempt }
    },
    async succeeded (account) {
      await failureStore.delete(keyOf(account))
    },
    async release (account, { attempt }) {
      if (attempt !== undefined) await failureStore.release(keyOf(account), attempt)
    }
  }
  fastify.decorate('loginThrottle', loginThrottle)
}, { name: 'login-throttle', dependencies: ['redis'] })

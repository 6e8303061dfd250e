import type { Redis } from 'ioredis'
import type { Logger } from '../logger.js'
import type { FailureStore, ReserveResult } from './failure-store.js'

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
export function redisFailureStore (redis: Redis, log: Logger): FailureStore {
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

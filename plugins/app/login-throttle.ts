import fp from 'fastify-plugin'
import type { Config } from '../../src/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    loginThrottle: LoginThrottle
  }
}

export interface LoginThrottle {
  /** Seconds until `key` may try again; 0 when it may try now. Counting nothing, so a check costs no attempt. */
  retryAfterSeconds (key: string): number
  recordFailure (key: string): void
  /** A successful login clears the key's failures. */
  clear (key: string): void
}

// Bounds memory under a flood of distinct keys: the oldest window is dropped first.
const MAX_TRACKED_KEYS = 100_000

/**
 * Counts failed logins per key (client address and email) in a fixed window.
 * Only failures count, so a user who logs in often is never slowed, while
 * guessing one account's password stops after RATE_LIMIT_LOGIN_MAX wrong tries.
 * @fastify/rate-limit counts every request and cannot tell a failure before it
 * happens; hence this small counter. It lives in memory, per process.
 */
export default fp<{ rateLimit: Config['rateLimit'] }>(async (fastify, { rateLimit }) => {
  if (!rateLimit.enabled) {
    fastify.decorate('loginThrottle', { retryAfterSeconds: () => 0, recordFailure () {}, clear () {} })
    return
  }
  const windowMs = rateLimit.windowSeconds * 1000
  const failures = new Map<string, { count: number, windowEndsAt: number }>()

  const current = (key: string, now: number) => {
    const entry = failures.get(key)
    if (entry !== undefined && entry.windowEndsAt <= now) {
      failures.delete(key)
      return undefined
    }
    return entry
  }

  const loginThrottle: LoginThrottle = {
    retryAfterSeconds (key) {
      const now = Date.now()
      const entry = current(key, now)
      return entry !== undefined && entry.count >= rateLimit.loginMax ? Math.ceil((entry.windowEndsAt - now) / 1000) : 0
    },
    recordFailure (key) {
      const now = Date.now()
      const entry = current(key, now)
      if (entry !== undefined) {
        entry.count += 1
        return
      }
      if (failures.size >= MAX_TRACKED_KEYS) failures.delete(failures.keys().next().value as string)
      failures.set(key, { count: 1, windowEndsAt: now + windowMs })
    },
    clear (key) {
      failures.delete(key)
    }
  }
  fastify.decorate('loginThrottle', loginThrottle)
}, { name: 'login-throttle' })

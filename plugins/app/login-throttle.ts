import fp from 'fastify-plugin'
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
 * Where the failure counts live. In memory (one process) by default; a Redis
 * implementation (HINCRBY + HSET + PEXPIRE in one MULTI) fits the same three
 * calls and shares the counts between instances. `increment` must be atomic:
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

export interface LoginThrottleOptions {
  rateLimit: Config['rateLimit']
  /** Where to keep the counts; memory by default. */
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
export default fp<LoginThrottleOptions>(async (fastify, { rateLimit, failureStore = memoryFailureStore() }) => {
  if (!rateLimit.enabled) {
    fastify.decorate('loginThrottle', { retryAfterSeconds: async () => 0, async recordFailure () {}, async clear () {} })
    return
  }
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
}, { name: 'login-throttle' })

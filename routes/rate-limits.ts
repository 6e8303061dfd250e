import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import type { Config } from '../core/config.js'
import { rateLimited } from '../core/errors.js'

export interface Limit {
  /** Counts apart from every other limit. */
  name: string
  max: number
  /** What is counted (a client address, an account); undefined counts nothing. */
  key: (request: FastifyRequest) => string | undefined
}

/**
 * A preHandler that counts a request against several limits at once (per
 * client address and per account) with @fastify/rate-limit's counters; the
 * first limit exceeded answers 429 RATE_LIMITED with Retry-After (set by the error handler). Its route
 * option takes a single key, hence this. As a preHandler it sees the
 * validated body and the verified access token. None with RATE_LIMIT_ENABLED=false.
 */
export function limitEach (fastify: FastifyInstance, rateLimit: Config['rateLimit'], limits: Limit[]): preHandlerAsyncHookHandler[] {
  if (!rateLimit.enabled) return []
  const counters = limits.map(limit => ({
    limit,
    count: fastify.createRateLimit({
      max: limit.max,
      timeWindow: rateLimit.windowSeconds * 1000,
      keyGenerator: (request) => `${limit.name}|${limit.key(request) ?? ''}`
    })
  }))
  return [async (request) => {
    for (const { limit, count } of counters) {
      if (limit.key(request) === undefined) continue
      const result = await count(request)
      if (!result.isAllowed && result.isExceeded) throw rateLimited(result.ttlInSeconds)
    }
  }]
}

/** One signed-in user's requests to a route that changes the account or checks its password (RATE_LIMIT_ACCOUNT_MAX per window). */
export function perUser (name: string, rateLimit: Config['rateLimit']): Limit {
  return { name: `${name}:user`, max: rateLimit.accountMax, key: (request) => request.accessClaims === null ? undefined : String(request.accessClaims.userId) }
}

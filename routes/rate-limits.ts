import type { Static, TSchema } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { clientAddressKey } from '../core/client-address.js'
import type { Config } from '../core/config.js'
import { rateLimited } from '../core/errors.js'

export interface Limit<Request = FastifyRequest> {
  /** Counts apart from every other limit. */
  name: string
  max: number
  /** What is counted (a client address, an account); undefined counts nothing. */
  key: (request: Request) => string | undefined
}

/** The request of a route whose body `Schema` validated: what a `preHandler` limit's key may read. */
export type WithBody<Schema extends TSchema> = FastifyRequest<{ Body: Static<Schema> }>

/** A hook that counts a request, for a route's `onRequest` or `preHandler` option. */
export type LimitHook<Request = FastifyRequest> = (request: Request, reply: FastifyReply) => Promise<void>

/**
 * The one way a route is rate-limited: a hook that counts the request against one or more limits (per client
 * address, per account) with @fastify/rate-limit's counters (in Redis with REDIS_URL), for the route's options.
 * As `onRequest`, it counts before the body is read, so a limited client costs no parsing: the per-address
 * limits of login and registration. As `preHandler`, it sees the validated body and the verified access
 * token, for limits keyed by them; `Request` is then the route's request, so a key reads the body as its
 * schema types it. The first limit exceeded answers 429 RATE_LIMITED with Retry-After (set by the error
 * handler); every answer carries @fastify/rate-limit's X-RateLimit-Limit, -Remaining and -Reset, of the limit
 * nearest to its end. None with RATE_LIMIT_ENABLED=false.
 */
export function limitEach<Request extends FastifyRequest = FastifyRequest> (
  fastify: FastifyInstance, rateLimit: Config['rateLimit'], limits: Array<Limit<Request>>
): Array<LimitHook<Request>> {
  if (!rateLimit.enabled) return []
  const counters = limits.map(limit => ({
    limit,
    count: fastify.createRateLimit({
      max: limit.max,
      timeWindow: rateLimit.windowSeconds * 1000,
      keyGenerator: (request) => `${limit.name}|${limit.key(request as Request) ?? ''}`
    })
  }))
  return [async (request, reply) => {
    let nearest: { max: number, remaining: number, ttlInSeconds: number } | undefined
    for (const { limit, count } of counters) {
      if (limit.key(request) === undefined) continue
      const result = await count(request)
      if (result.isAllowed) continue
      if (result.isExceeded) {
        reply.header('x-ratelimit-limit', result.max).header('x-ratelimit-remaining', 0).header('x-ratelimit-reset', result.ttlInSeconds)
        throw rateLimited(result.ttlInSeconds)
      }
      if (nearest === undefined || result.remaining < nearest.remaining) nearest = result
    }
    if (nearest !== undefined) {
      reply.header('x-ratelimit-limit', nearest.max).header('x-ratelimit-remaining', nearest.remaining).header('x-ratelimit-reset', nearest.ttlInSeconds)
    }
  }]
}

/** Requests from one client address (an IPv6 client per /64). */
export function perAddress (name: string, max: number): Limit {
  return { name: `${name}:ip`, max, key: clientAddressKey }
}

/** One signed-in user's requests to a route that changes the account or checks its password (RATE_LIMIT_ACCOUNT_MAX per window). */
export function perUser (name: string, rateLimit: Config['rateLimit']): Limit {
  return { name: `${name}:user`, max: rateLimit.accountMax, key: (request) => request.accessClaims === null ? undefined : String(request.accessClaims.userId) }
}

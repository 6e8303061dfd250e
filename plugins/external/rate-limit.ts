import fastifyRateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import { clientAddressKey } from '../../core/client-address.js'
import type { Config } from '../../core/config.js'
import { RateLimitedError } from '../../core/errors.js'

export interface RateLimitOptions {
  rateLimit: Config['rateLimit']
}

/**
 * Registers @fastify/rate-limit with no global limit: routes opt in with
 * routes/rate-limits.ts's limitEach, which counts with its counters (in
 * onRequest for the per-address limits, so a limited client costs no body
 * parsing). Failed logins are counted apart, by
 * plugins/app/login-throttle. RATE_LIMIT_ENABLED=false leaves it out
 * altogether (benchmarks, load tests).
 *
 * With REDIS_URL the counters live in Redis, so every instance behind a load
 * balancer counts against the same limit; else in this process's memory. If
 * Redis stops answering, requests are served without a limit rather than
 * refused (skipOnError): a counter outage must not take logins down.
 */
export default fp<RateLimitOptions>(async (fastify, { rateLimit }) => {
  if (!rateLimit.enabled) return
  await fastify.register(fastifyRateLimit, {
    global: false,
    timeWindow: rateLimit.windowSeconds * 1000,
    // Per client address, an IPv6 client per /64 (core/client-address.ts).
    keyGenerator: clientAddressKey,
    ...(fastify.hasDecorator('redis') ? { redis: fastify.redis, nameSpace: 'rate-limit:', skipOnError: true } : {}),
    errorResponseBuilder: (_request, context) => new RateLimitedError(Math.ceil(context.ttl / 1000))
  })
}, { name: 'rate-limit', dependencies: ['redis'] })

import fastifyRateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import type { Config } from '../../src/config.js'
import { RateLimitedError } from '../../src/errors.js'

export interface RateLimitOptions {
  rateLimit: Config['rateLimit']
}

/**
 * Registers @fastify/rate-limit with no global limit: routes opt in with
 * `config.rateLimit` (see routes/auth). It counts in onRequest, so a limited
 * client costs no body parsing. Failed logins are counted apart, by
 * plugins/app/login-throttle. RATE_LIMIT_ENABLED=false leaves it out
 * altogether (benchmarks, load tests).
 */
export default fp<RateLimitOptions>(async (fastify, { rateLimit }) => {
  if (!rateLimit.enabled) return
  await fastify.register(fastifyRateLimit, {
    global: false,
    timeWindow: rateLimit.windowSeconds * 1000,
    errorResponseBuilder: (_request, context) => new RateLimitedError(Math.ceil(context.ttl / 1000))
  })
}, { name: 'rate-limit' })

import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

// Process metrics (memory, CPU, event loop) are one per process, however many apps a process builds (the tests build many).
let processRegistry: Registry | undefined
function processMetrics (): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

/** The route pattern (`/users/:userId`), never the raw URL: one series per route, whatever clients send. */
function routeOf (request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched'
}

/**
 * Prometheus metrics at GET /metrics: requests and their latency per route,
 * and the auth events an operator watches, derived in one onResponse hook
 * from the route and the answer (status and error code), so the services
 * that do the work stay unaware of metrics.
 */
export default fp(async (fastify) => {
  const registry = new Registry()
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames: ['method', 'route', 'status_code'], registers: [registry] })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to answering it',
    labelNames: ['method', 'route', 'status_code'],
    // Password hashing puts logins near 50-100 ms; everything else should be a few ms.
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry]
  })
  const logins = new Counter({ name: 'auth_logins_total', help: 'Login attempts by result: ok, or failed (wrong email or password)', labelNames: ['result'], registers: [registry] })
  const refreshes = new Counter({ name: 'auth_refreshes_total', help: 'Token refreshes by result: ok, or failed (any 401)', labelNames: ['result'], registers: [registry] })
  const reuses = new Counter({ name: 'auth_refresh_reuse_detected_total', help: 'Rotated refresh tokens presented after the grace period (session revoked)', registers: [registry] })
  const rateLimited = new Counter({ name: 'rate_limit_hits_total', help: 'Requests refused with 429', labelNames: ['route'], registers: [registry] })
  for (const result of ['ok', 'failed']) { logins.inc({ result }, 0); refreshes.inc({ result }, 0) }

  // The code of an error answer, taken from the error itself (onError runs for errors only, before the handler).
  const errorCodes = new WeakMap<FastifyRequest, string>()
  fastify.addHook('onError', async (request, _reply, error) => {
    if (typeof error.code === 'string') errorCodes.set(request, error.code)
  })

  fastify.addHook('onResponse', async (request, reply) => {
    const route = routeOf(request)
    const labels = { method: request.method, route, status_code: String(reply.statusCode) }
    requests.inc(labels)
    duration.observe(labels, reply.elapsedTime / 1000)
    const status = reply.statusCode
    if (status === 429) rateLimited.inc({ route })
    if (request.method !== 'POST') return
    if (route.endsWith('/auth/login')) {
      if (status === 200) logins.inc({ result: 'ok' })
      else if (status === 401) logins.inc({ result: 'failed' })
    } else if (route.endsWith('/auth/refresh-token') || route.endsWith('/auth/auth-me')) {
      if (status === 200) refreshes.inc({ result: 'ok' })
      else if (status === 401) refreshes.inc({ result: 'failed' })
      if (errorCodes.get(request) === 'REFRESH_TOKEN_REUSED') reuses.inc()
    }
  })

  fastify.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType)
    return (await processMetrics().metrics()) + (await registry.metrics())
  })
}, { name: 'metrics' })

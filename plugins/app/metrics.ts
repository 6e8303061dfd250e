import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onResponseHookHandler } from 'fastify'
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client'
import { RequestMetrics, type RequestSeries } from '../../core/metrics/request-metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Prometheus exposition, for whichever listener serves /metrics. */
    metricsText (): Promise<{ contentType: string, body: string }>
  }
  interface FastifyContextConfig {
    /**
     * Which auth counter the route feeds: 'login' for every route that completes a sign-in (password,
     * second step, passkey, provider), 'refresh' for the refresh routes. Its 200 counts as ok, its 401 as failed.
     */
    metric?: 'login' | 'refresh'
  }
}

export interface MetricsOptions {
  /** Serve GET /metrics on this (the public) listener too. */
  publicRoute: boolean
}

// Process metrics (memory, CPU, event loop) are one per process, however many apps a process builds (the tests build many).
let processRegistry: Registry | undefined
function processMetrics (): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

/**
 * Prometheus metrics at GET /metrics: requests and their latency per route,
 * and the auth events an operator watches, derived in onResponse hooks
 * from the route and the answer (status and error code), so the services
 * that do the work stay unaware of metrics.
 */
export default fp<MetricsOptions>(async (fastify, { publicRoute }) => {
  const registry = new Registry()
  // Requests and their latency per route: plain numbers per series, read out at a scrape (core/metrics/request-metrics.ts).
  const requestMetrics = new RequestMetrics({
    requests: { name: 'http_requests_total', help: 'HTTP requests answered' },
    // Password hashing puts logins near 50-100 ms; everything else should be a few ms.
    duration: { name: 'http_request_duration_seconds', help: 'Time from receiving a request to answering it', buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] }
  })
  for (const metric of [requestMetrics.requests, requestMetrics.duration]) registry.registerMetric(metric as unknown as Metric)
  // The auth counters are counted in plain numbers too, and set from them at a scrape: a labelled
  // prom-client inc hashes its labels per call, and every refresh counts one.
  const counts = { logins: { ok: 0, failed: 0 }, refreshes: { ok: 0, failed: 0 }, reuses: 0, rateLimited: new Map<string, number>() }
  const byResult = (name: string, help: string, of: { ok: number, failed: number }) => new Counter({
    name,
    help,
    labelNames: ['result'],
    registers: [],
    collect () { this.reset(); this.inc({ result: 'ok' }, of.ok); this.inc({ result: 'failed' }, of.failed) }
  })
  const authMetrics: Array<Counter<string>> = [
    byResult('auth_logins_total', 'Login attempts by result: ok, or failed (wrong email or password, wrong second-factor code)', counts.logins),
    byResult('auth_refreshes_total', 'Token refreshes by result: ok, or failed (any 401)', counts.refreshes),
    new Counter({
      name: 'auth_refresh_reuse_detected_total',
      help: 'Rotated refresh tokens presented after the grace period (session revoked)',
      registers: [],
      collect () { this.reset(); this.inc(counts.reuses) }
    }),
    new Counter({
      name: 'rate_limit_hits_total',
      help: 'Requests refused with 429',
      labelNames: ['route'],
      registers: [],
      collect () { this.reset(); for (const [route, hits] of counts.rateLimited) this.inc({ route }, hits) }
    })
  ]
  for (const metric of authMetrics) registry.registerMetric(metric)

  // Mail, read from the mailer at each scrape (it is registered after this plugin, and stays unaware of metrics).
  const mailer = () => fastify.hasDecorator('mailer') ? fastify.mailer : undefined
  const mailMetrics = [
    new Gauge({
      name: 'mail_queued',
      help: 'Mails waiting in the outbox (of every instance): not yet sent, not given up',
      registers: [],
      async collect () {
        // A store that does not answer leaves the last value; the scrape itself still succeeds.
        const queued = await mailer()?.queued().catch(() => undefined)
        if (queued !== undefined) this.set(queued)
      }
    }),
    new Counter({ name: 'mail_sent_total', help: 'Mails this instance handed to the mail server', registers: [], collect () { this.reset(); this.inc(mailer()?.sent ?? 0) } }),
    new Counter({
      name: 'mail_failed_total',
      help: 'Mails this instance gave up after MAIL_MAX_ATTEMPTS attempts, or could not queue',
      registers: [],
      collect () { this.reset(); this.inc(mailer()?.failed ?? 0) }
    })
  ]
  for (const metric of mailMetrics) registry.registerMetric(metric)

  // The code of an error answer, taken from the error itself (onError runs for errors only, before the handler).
  const errorCodes = new WeakMap<FastifyRequest, string>()
  fastify.addHook('onError', async (request, _reply, error) => {
    if (typeof error.code === 'string') errorCodes.set(request, error.code)
  })

  /** One route's (or the unmatched URLs') series: one per method and status, made at its first use and kept. */
  function recorder (route: string, kind: 'login' | 'refresh' | 'other'): (request: FastifyRequest, reply: FastifyReply) => void {
    const series = new Map<string, Map<number, RequestSeries>>()
    const authCounts = kind === 'login' ? counts.logins : counts.refreshes
    return function record (request, reply) {
      const status = reply.statusCode
      let byStatus = series.get(request.method)
      if (byStatus === undefined) series.set(request.method, byStatus = new Map())
      let numbers = byStatus.get(status)
      if (numbers === undefined) byStatus.set(status, numbers = requestMetrics.series(request.method, route, status))
      numbers.record(reply.elapsedTime / 1000)
      if (status === 429) counts.rateLimited.set(route, (counts.rateLimited.get(route) ?? 0) + 1)
      if (kind === 'other') return
      if (status === 200) authCounts.ok++
      else if (status === 401) authCounts.failed++
      if (kind === 'refresh' && errorCodes.get(request) === 'REFRESH_TOKEN_REUSED') counts.reuses++
    }
  }

  // Each route gets its own onResponse hook, made at start with its pattern (`/users/:userId`, never the raw
  // URL) at hand: reading request.routeOptions per request would build an object each time.
  fastify.addHook('onRoute', (routeOptions) => {
    // Which auth counter the route feeds is declared by the route (config.metric), known at start.
    const record = recorder(routeOptions.url, routeOptions.config?.metric ?? 'other')
    const hook: onResponseHookHandler = function recordResponse (request, reply, done: HookHandlerDoneFunction) {
      record(request, reply)
      done()
    }
    const existing = routeOptions.onResponse
    routeOptions.onResponse = existing === undefined ? [hook] : [...(Array.isArray(existing) ? existing : [existing]), hook]
  })
  // URLs that match no route share one series.
  const recordUnmatched = recorder('unmatched', 'other')
  fastify.addHook('onResponse', function recordNotFound (request, reply, done) {
    if (request.is404) recordUnmatched(request, reply)
    done()
  })

  const metricsText = async () => ({ contentType: registry.contentType, body: (await processMetrics().metrics()) + (await registry.metrics()) })
  fastify.decorate('metricsText', metricsText)

  if (publicRoute) {
    fastify.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const { contentType, body } = await metricsText()
      reply.type(contentType)
      return body
    })
  }
}, { name: 'metrics' })

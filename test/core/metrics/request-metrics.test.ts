import { Counter, Histogram, Registry, type Metric } from 'prom-client'
import t from 'tap'
import { RequestMetrics } from '../../../core/metrics/request-metrics.js'

const requests = { name: 'http_requests_total', help: 'HTTP requests answered' }
const duration = { name: 'http_request_duration_seconds', help: 'Time from receiving a request to answering it', buckets: [0.001, 0.01, 0.1] }

t.test('the exposition is prom-client\'s own Counter and Histogram fed the same answers, line for line', async (t) => {
  const answers: Array<[string, string, number, number]> = [
    ['GET', '/users/:userId', 200, 0.0004], ['GET', '/users/:userId', 200, 0.001], ['GET', '/users/:userId', 200, 0.002],
    ['GET', '/users/:userId', 401, 0.05], ['POST', '/auth/login', 200, 0.3], ['GET', '/users/:userId', 200, 0.1]
  ]
  const ours = new Registry()
  const metrics = new RequestMetrics({ requests, duration })
  for (const metric of [metrics.requests, metrics.duration]) ours.registerMetric(metric as unknown as Metric)
  const theirs = new Registry()
  const labelNames = ['method', 'route', 'status_code']
  const counter = new Counter({ ...requests, labelNames, registers: [theirs] })
  const histogram = new Histogram({ ...duration, labelNames, registers: [theirs] })

  const series = new Map<string, ReturnType<RequestMetrics['series']>>()
  for (const [method, route, status, seconds] of answers) {
    const key = `${method} ${route} ${status}`
    if (!series.has(key)) series.set(key, metrics.series(method, route, status))
    series.get(key)?.record(seconds)
    counter.inc({ method, route, status_code: status })
    histogram.observe({ method, route, status_code: status }, seconds)
  }
  const lines = async (registry: Registry) => (await registry.metrics()).split('\n').sort()
  t.same(await lines(ours), await lines(theirs))
  t.match(await ours.metrics(), /^http_request_duration_seconds_bucket\{le="0.001",method="GET",route="\/users\/:userId",status_code="200"\} 2$/m, 'a bound counts the answers at it')
})

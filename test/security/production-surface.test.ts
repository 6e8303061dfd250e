import t from 'tap'
import { build } from '../fixtures/build.js'
import { startServer } from '../fixtures/process.js'
import { listenMetrics } from '../../src/metrics-listener.js'

// Finding 10: in production /metrics, /docs and /openapi.json were public.

t.test('production: /metrics, /docs and /openapi.json are not on the public listener', async (t) => {
  const server = await build(t, { env: { NODE_ENV: 'production' } })
  for (const url of ['/metrics', '/docs', '/docs/', '/openapi.json']) {
    t.equal((await server.inject(url)).statusCode, 404, `${url}: 404`)
  }
})

t.test('DOCS=true serves the docs in production too; DOCS=false hides them elsewhere', async (t) => {
  const documented = await build(t, { env: { NODE_ENV: 'production', DOCS: 'true' } })
  t.equal((await documented.inject('/openapi.json')).statusCode, 200)
  const hidden = await build(t, { env: { DOCS: 'false' } })
  t.equal((await hidden.inject('/openapi.json')).statusCode, 404)
  t.equal((await hidden.inject('/docs')).statusCode, 404)
})

t.test('METRICS_PORT: /metrics is served on its own listener, and no longer on the public one', async (t) => {
  const plain = await build(t)
  t.equal((await plain.inject('/metrics')).statusCode, 200, 'outside production without METRICS_PORT it stays public')
  const server = await build(t, { env: { METRICS_PORT: '0' } })
  t.equal((await server.inject('/metrics')).statusCode, 404, 'not on the public listener')
  const metrics = await listenMetrics(server, { host: '127.0.0.1', port: 0 })
  t.teardown(() => { metrics.server.close() })
  const response = await fetch(metrics.url)
  t.equal(response.status, 200)
  t.match(await response.text(), /^http_requests_total\{/m)
  t.equal((await fetch(metrics.url.replace('/metrics', '/docs'))).status, 404, 'only /metrics there')
})

t.test('the real server in production: /metrics on METRICS_HOST:METRICS_PORT only', async (t) => {
  const { baseUrl, output } = await startServer(t, { METRICS_PORT: '0', DATABASE_URL: ':memory:' })
  // The metrics listener starts right after the public one.
  let url: string | undefined
  for (let waited = 0; url === undefined && waited < 10_000; waited += 50) {
    url = /metrics listening at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(output())?.[1]
    if (url === undefined) await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.ok(url, 'the start logs where /metrics listens')
  t.equal((await fetch(`${baseUrl}/metrics`)).status, 404, 'not public')
  t.equal((await fetch(`${baseUrl}/openapi.json`)).status, 404, 'no docs in production')
  const response = await fetch(url as string)
  t.equal(response.status, 200)
  t.match(await response.text(), /process_resident_memory_bytes/)
})

import { once } from 'node:events'
import { createServer } from 'node:http'
import { test } from 'tap'
import { measureCounted } from '../../bench/load.js'

// Issue 34: a counted run (the code exchange's batches of single-use codes) is timed to its last answer.
// autocannon noticed the end only at its next one-second sample tick, so a batch answered in a tenth of a
// second counted as a whole second: every build's code exchange read about 1,000 req/s.
test('a counted batch is timed to its last answer, not to the next whole second', async (t) => {
  // The server's own account of each batch: from its first request to its last answer.
  const spans: Array<{ first: number, last: number }> = []
  const server = createServer((_request, response) => {
    const span = spans[spans.length - 1]
    span.first = Math.min(span.first, performance.now())
    response.end('ok', () => { span.last = Math.max(span.last, performance.now()) })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const { port } = server.address() as { port: number }
  const url = `http://127.0.0.1:${port}`
  const measured = await measureCounted(async (amount) => {
    spans.push({ first: Infinity, last: 0 })
    return { url, amount, requests: [{ method: 'GET', path: '/' }], connections: 10 }
  }, { warmupSeconds: 0.1, seconds: 0.1 }, { warmup: 300, batchMax: 300 })
  t.equal(measured.errors, 0)
  // The warm-up batch is not counted; the others' requests over their spans is the rate the server saw.
  const counted = spans.slice(1)
  const servedSeconds = counted.reduce((sum, span) => sum + (span.last - span.first) / 1000, 0)
  const measuredSeconds = counted.length * 300 / measured.requestsPerSecond
  // Load on the machine stretches both alike; the old rounding added up to a whole second a batch.
  t.ok(measuredSeconds - servedSeconds < 0.15 * counted.length,
    `${counted.length} batch(es): timed ${measuredSeconds.toFixed(3)} s, served in ${servedSeconds.toFixed(3)} s`)
})

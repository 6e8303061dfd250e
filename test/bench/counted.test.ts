import { once } from 'node:events'
import { createServer } from 'node:http'
import { test } from 'tap'
import { measureCounted } from '../../bench/load.js'

// Issue 34: a counted run (the code exchange's batches of single-use codes) is timed to its last answer.
// autocannon noticed the end only at its next one-second sample tick, so a batch answered in a tenth of a
// second counted as a whole second: every build's code exchange read about 1,000 req/s.
test('a counted batch answered in a fraction of a second is timed as that fraction, not as a whole second', async (t) => {
  const server = createServer((_request, response) => { response.end('ok') })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const { port } = server.address() as { port: number }
  const url = `http://127.0.0.1:${port}`
  const measured = await measureCounted(async (amount) => ({ url, amount, requests: [{ method: 'GET', path: '/' }], connections: 10 }),
    { warmupSeconds: 0.1, seconds: 0.1 }, { warmup: 300, batchMax: 300 })
  t.equal(measured.errors, 0)
  t.ok(measured.requestsPerSecond > 1000, `300 requests to a bare server: ${measured.requestsPerSecond.toFixed(0)} req/s`)
})

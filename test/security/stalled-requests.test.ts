import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { build, testConfig } from '../fixtures/build.js'
import { serverOptions } from '../../src/app.js'

/*
 * Finding 6 of the second review: a request whose body stalled held its connection forever
 * (Fastify's requestTimeout was 0, and no socket timeout either), so a few hundred such
 * connections starve the service. REQUEST_TIMEOUT (default 30 s) bounds a whole request and a
 * silent connection; the tests set it short instead of waiting 30 s.
 */

/** How long a test waits for the server to close the connection before it calls it held forever. */
const HELD_FOREVER_MS = 8000

async function listening (t: Test, requestTimeout: string): Promise<number> {
  const server = await build(t, { variant: 'cookie', env: { REQUEST_TIMEOUT: requestTimeout } })
  await server.listen({ port: 0, host: '127.0.0.1' })
  return (server.server.address() as AddressInfo).port
}

/** What the server wrote and when it closed the connection (or `closed: false` when it held it past HELD_FOREVER_MS). */
async function untilClosed (socket: Socket, started: number): Promise<{ closed: boolean, afterMs: number, answer: string }> {
  let answer = ''
  socket.on('data', (chunk: Buffer) => { answer += chunk.toString() })
  return await new Promise(resolve => {
    const held = setTimeout(() => { socket.destroy(); resolve({ closed: false, afterMs: Date.now() - started, answer }) }, HELD_FOREVER_MS)
    socket.on('close', () => { clearTimeout(held); resolve({ closed: true, afterMs: Date.now() - started, answer }) })
    socket.on('error', () => {})
  })
}

/** A 408 in the contract's error shape, not Node's or Fastify's own text. */
function assertTimeoutAnswer (t: Test, answer: string): void {
  t.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/, 'answered 408')
  t.match(answer, /\r\nContent-Type: application\/json/i)
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))
  t.same(body, { statusCode: 408, code: 'REQUEST_TIMEOUT', error: 'Request Timeout', message: 'The request did not arrive within REQUEST_TIMEOUT' }, 'in the contract\'s error shape')
}

const HEAD = 'POST /auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n'

t.test('a request whose body stops half-way has its connection closed within REQUEST_TIMEOUT', async (t) => {
  const port = await listening(t, '300ms')
  const socket = connect(port, '127.0.0.1')
  const started = Date.now()
  socket.write(HEAD + '{"email":"a@example.com",')
  const { closed, afterMs, answer } = await untilClosed(socket, started)
  t.ok(closed, 'the server closes the connection')
  t.ok(afterMs < 3000, `soon after REQUEST_TIMEOUT (${afterMs} ms)`)
  // The silence bound (connectionTimeout) and the whole-request bound are the same: whichever Node notices first ends it.
  if (answer !== '') assertTimeoutAnswer(t, answer)
})

t.test('a body that falls silent half-way gets the documented 408 in the error shape before the connection closes (review 3, 16)', async (t) => {
  const port = await listening(t, '300ms')
  // Several at once: whichever of Node's bounds notices first (the silence or the whole request), the answer is the 408.
  const outcomes = await Promise.all(Array.from({ length: 4 }, async () => {
    const socket = connect(port, '127.0.0.1')
    const started = Date.now()
    socket.write(HEAD + '{"email":"a@example.com",')
    return await untilClosed(socket, started)
  }))
  for (const { closed, afterMs, answer } of outcomes) {
    t.ok(closed, 'the server closes the connection')
    t.ok(afterMs < 3000, `soon after REQUEST_TIMEOUT (${afterMs} ms)`)
    assertTimeoutAnswer(t, answer)
  }
})

t.test('a body sent a byte at a time, never falling silent, is cut off at REQUEST_TIMEOUT with a 408', async (t) => {
  const port = await listening(t, '500ms')
  const socket = connect(port, '127.0.0.1')
  const started = Date.now()
  socket.write(HEAD)
  // Each byte well within the silence allowed, so only the bound on the whole request can end it.
  const drip = setInterval(() => { if (socket.writable) socket.write(' ') }, 100)
  t.teardown(() => clearInterval(drip))
  const { closed, afterMs, answer } = await untilClosed(socket, started)
  clearInterval(drip)
  t.ok(closed, 'the server closes the connection')
  t.ok(afterMs < 4000, `soon after REQUEST_TIMEOUT (${afterMs} ms)`)
  assertTimeoutAnswer(t, answer)
})

t.test('a connection that sends nothing at all is closed within REQUEST_TIMEOUT', async (t) => {
  const port = await listening(t, '300ms')
  const socket = connect(port, '127.0.0.1')
  const { closed, afterMs } = await untilClosed(socket, Date.now())
  t.ok(closed, 'the server closes the connection')
  t.ok(afterMs < 3000, `soon after REQUEST_TIMEOUT (${afterMs} ms)`)
})

t.test('by default a request may take 30 seconds, no more, and REQUEST_TIMEOUT cannot switch the bound off', async (t) => {
  const options = serverOptions(testConfig())
  t.equal(options.requestTimeout, 30_000)
  t.equal(options.connectionTimeout, 30_000)
  t.throws(() => testConfig({ REQUEST_TIMEOUT: '0ms' }), /REQUEST_TIMEOUT/)
  t.throws(() => testConfig({ REQUEST_TIMEOUT: '31s' }), /REQUEST_TIMEOUT/)
  t.equal(serverOptions(testConfig({ REQUEST_TIMEOUT: '10s' })).requestTimeout, 10_000)
})

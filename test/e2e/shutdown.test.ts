import { existsSync } from 'node:fs'
import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { startServer } from '../fixtures/process.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

/** Whether a new TCP connection to the port is accepted. */
async function accepts (port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1')
  try {
    await once(socket, 'connect')
    return true
  } catch {
    return false
  } finally {
    socket.destroy()
  }
}

t.test('SIGTERM: an in-flight request completes, new connections are refused, the store is closed, exit code 0', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const { baseUrl, child, output } = await startServer(t, { API_VARIANT: 'cookie', DATABASE_URL: databaseUrl })
  const port = Number(new URL(baseUrl).port)
  const user = { first_name: 'Ada', last_name: 'Lovelace', username: 'ada', email: 'ada@example.com', password: 'analytical engine' }
  const registered = await fetch(`${baseUrl}/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify(user) })
  t.equal(registered.status, 201)
  t.ok(existsSync(`${databaseUrl}-wal`), 'the store is open (its write-ahead log exists)')

  // A login whose body is only half sent when the signal comes: the request is in flight.
  const body = JSON.stringify({ email: user.email, password: user.password })
  const inFlight = connect(port, '127.0.0.1')
  await once(inFlight, 'connect')
  let answer = ''
  inFlight.setEncoding('utf8').on('data', (chunk) => { answer += chunk })
  inFlight.write(`POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nX-Request-Id: in-flight-login\r\n\r\n${body.slice(0, 10)}`)
  await new Promise(resolve => setTimeout(resolve, 200))

  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const deadline = Date.now() + 5000
  while (Date.now() < deadline && await accepts(port)) await new Promise(resolve => setTimeout(resolve, 25))
  t.notOk(await accepts(port), 'a new connection is refused once shutdown has begun')
  t.equal(child.exitCode, null, 'the process waits for the request in flight')

  inFlight.write(body.slice(10))
  const [code, signal] = await exited
  t.match(answer, /^HTTP\/1\.1 200 OK\r\n/, 'the in-flight login completed')
  t.match(answer, /x-request-id: in-flight-login/i)
  t.match(answer, /connection: close/i, 'its client is told the connection ends')
  t.match(answer, /"email":"ada@example.com"/)
  t.equal(code, 0, 'exit code 0')
  t.equal(signal, null)
  t.match(output(), /"signal":"SIGTERM","msg":"shutting down"/)
  t.match(output(), /"reqId":"in-flight-login"/, 'the request id is in the log')
  t.notOk(existsSync(`${databaseUrl}-wal`), 'the store was closed (SQLite removes the write-ahead log on a clean close)')
})

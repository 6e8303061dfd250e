import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { build } from '../fixtures/build.js'
import { POSTGRES_SKIP_MESSAGE, TEST_DATABASE_URL, onPostgres, postgresSchema } from '../fixtures/database.js'
import { call } from '../fixtures/http.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'
import { startServer } from '../fixtures/process.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

/*
 * The outbox across processes: mail queued when the server is SIGKILLed goes out after the
 * restart; several instances on one store send each mail once.
 * (The SIGKILL test runs dist/src/server.js: `npm run build` first.)
 */

const RESET = 'Reset your password'
const VERIFY = 'Verify your email address'

/** A port on which nothing listens: a mail server that is down. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

t.test('mail queued when the server is SIGKILLed is sent after the restart, once', { skip: onPostgres && 'SIGKILL against a SQLite file: tested in the SQLite pass' }, async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const environment = { API_VARIANT: 'header', DATABASE_URL: databaseUrl, RATE_LIMIT_ENABLED: 'false', MAIL_RETRY_DELAY: '100ms' }
  const server = await startServer(t, { ...environment, SMTP_URL: `smtp://127.0.0.1:${await closedPort()}` })
  const credentials = { email: 'ada@example.com', password: 'analytical engine' }
  t.equal((await call(server.baseUrl, 'POST', '/auth/register', { body: { first_name: 'Ada', last_name: 'Lovelace', ...credentials } })).status, 201)
  t.equal((await call(server.baseUrl, 'POST', '/auth/forgot-password', { body: { email: credentials.email } })).status, 202)

  // Both mails in the outbox, tried at least once, and between two attempts (not claimed) when killed.
  const file = new Database(databaseUrl, { readonly: true })
  t.teardown(() => file.close())
  const waiting = file.prepare("select count(*) as mails from mail_outbox where status = 'pending' and attempts >= 1 and claimed_until is null").pluck()
  const deadline = Date.now() + 10_000
  while (waiting.get() !== 2 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 5))
  t.equal(waiting.get(), 2, 'both mails wait for a retry')
  const exited = once(server.child, 'exit')
  server.child.kill('SIGKILL')
  await exited
  t.equal(server.child.signalCode, 'SIGKILL')

  const mailbox = await startMailbox(t)
  const restarted = await startServer(t, { ...environment, SMTP_URL: mailbox.smtpUrl })
  const mail = await mailbox.next(credentials.email, RESET, 10_000)
  await mailbox.next(credentials.email, VERIFY, 10_000)
  const token = tokenFromLink(mail, 'http://localhost:3000', '/reset-password')
  t.equal((await call(restarted.baseUrl, 'POST', '/auth/reset-password', { body: { token, new_password: 'a brand new password' } })).status, 204, 'its link works')
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(mailbox.received.length, 2, 'each mail once')
})

/** Two app instances on one store and one mail server; `count` mails queued, then both workers woken at once. */
async function sendWithTwoInstances (t: Test, databaseUrl: string) {
  const mailbox = await startMailbox(t)
  const env = { DATABASE_URL: databaseUrl, SMTP_URL: mailbox.smtpUrl }
  const [first, second] = await Promise.all([build(t, { variant: 'header', env }), build(t, { variant: 'header', env })])
  const count = 40
  for (let n = 0; n < count; n++) await first.store.enqueueMail({ to: `user${n}@example.com`, subject: `mail ${n}`, text: 'hello' }, new Date())
  first.mailer.wake()
  second.mailer.wake()
  // Forgot-password through both, too: their mails are woken in the instance that queued them.
  const user = await first.inject({ method: 'POST', url: '/auth/register', payload: { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(user.statusCode, 201)
  for (const server of [first, second]) await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: 'ada@example.com' } })

  const expected = count + 3
  const deadline = Date.now() + 10_000
  while (mailbox.received.length < expected && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
  await Promise.all([first.mailer.idle(), second.mailer.idle()])
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(mailbox.received.length, expected, `${expected} mails received`)
  const subjects = mailbox.received.filter(mail => mail.subject?.startsWith('mail ')).map(mail => mail.subject)
  t.equal(new Set(subjects).size, count, 'each queued mail once')
  t.equal(mailbox.received.filter(mail => mail.subject === RESET).length, 2, 'each reset mail once')
  t.equal(first.mailer.sent + second.mailer.sent, expected, 'and each counted once')
  t.comment(`sent by the first instance: ${first.mailer.sent}, by the second: ${second.mailer.sent}`)
}

t.test('two PostgreSQL instances on one database send each mail once', {
  skip: TEST_DATABASE_URL === undefined ? POSTGRES_SKIP_MESSAGE : !onPostgres && 'runs in the PostgreSQL pass'
}, async (t) => {
  await sendWithTwoInstances(t, (await postgresSchema(t)).databaseUrl)
})

t.test('two processes on one SQLite file (a server and the CLI, say) send each mail once', { skip: onPostgres && 'SQLite file: tested in the SQLite pass' }, async (t) => {
  await sendWithTwoInstances(t, temporaryDatabase(t))
})

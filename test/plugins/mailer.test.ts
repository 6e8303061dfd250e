import { randomBytes } from 'node:crypto'
import { createServer, type AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../src/app.js'
import { MAX_RETRY_DELAY_MS, retryDelayMs } from '../../core/mail/mail-outbox.js'
import { build, CHEAP_HASH_PARAMETERS, testConfig } from '../fixtures/build.js'
import { selectAll, testDatabaseUrl } from '../fixtures/database.js'
import { registerUser } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'

const RESET = 'Reset your password'

/** A port on which nothing listens: a mail server that is down. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

/** The value of one series in Prometheus text format (0 when absent). */
async function sample (server: FastifyInstance, series: string): Promise<number> {
  const text = (await server.inject('/metrics')).body
  const line = text.split('\n').find(candidate => candidate.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

/** Waits (a few seconds at most) until `condition` holds. */
async function until (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`)
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

t.test('the retry delay doubles from MAIL_RETRY_DELAY at each attempt, up to an hour', async (t) => {
  t.same([1, 2, 3, 4].map(attempts => retryDelayMs(attempts, 10_000)), [10_000, 20_000, 40_000, 80_000])
  t.equal(retryDelayMs(30, 10_000), MAX_RETRY_DELAY_MS)
})

t.test('a mail server that is down changes no answer; the mail waits in the outbox', async (t) => {
  const server = await build(t, { variant: 'header', env: { SMTP_URL: `smtp://127.0.0.1:${await closedPort()}` } })
  t.equal(server.mailer.enabled, true)
  const user = await registerUser(server, 'header')
  const known = await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  const unknown = await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: 'nobody@example.com' } })
  t.equal(known.statusCode, 202)
  t.equal(known.body, unknown.body)
  await server.mailer.idle()
  t.equal(await server.mailer.queued(), 2, 'the verification mail and the reset mail, not lost')
  t.equal(server.mailer.sent, 0)
  t.equal(server.mailer.failed, 0, 'not given up after one attempt')
  t.equal(await sample(server, 'mail_queued'), 2)
})

t.test('SMTP down during a forgot-password: the mail arrives once the server is back, and only once', async (t) => {
  const port = await closedPort()
  const server = await build(t, { variant: 'header', env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_RETRY_DELAY: '50ms' } })
  const user = await registerUser(server, 'header')
  const forgot = await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  t.equal(forgot.statusCode, 202)
  await server.mailer.idle()
  t.equal(await server.mailer.queued(), 2, 'both mails wait while the server is down')

  const mailbox = await startMailbox(t, { port })
  const mail = await mailbox.next(user.email, RESET)
  const token = tokenFromLink(mail, 'http://localhost:3000', '/reset-password')
  const reset = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'a brand new password' } })
  t.equal(reset.statusCode, 204, 'the link of the retried mail works')
  await mailbox.next(user.email, 'Verify your email address')
  await until(async () => await server.mailer.queued() === 0, 'the outbox empties')
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(mailbox.received.filter(received => received.subject === RESET).length, 1, 'one reset mail, not one per attempt')
  t.equal(server.mailer.sent, 2)
  t.equal(await sample(server, 'mail_sent_total'), 2)
  t.equal(await sample(server, 'mail_queued'), 0)
})

t.test('a refused mail is retried with exponential backoff up to MAIL_MAX_ATTEMPTS, then given up and its body erased', async (t) => {
  const mailbox = await startMailbox(t, { refuse: true })
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, SMTP_URL: mailbox.smtpUrl, MAIL_MAX_ATTEMPTS: '4', MAIL_RETRY_DELAY: '40ms' } })
  await server.mailer.enqueue({ to: 'ada@example.com', subject: 'A secret link', text: 'https://example.com/#token=secret' })
  await until(() => server.mailer.failed === 1, 'the mail is given up')
  t.equal(mailbox.connections.length, 4, 'MAIL_MAX_ATTEMPTS attempts')
  const gaps = mailbox.connections.slice(1).map((at, index) => at - mailbox.connections[index])
  t.ok(gaps[0] >= 38, `first retry after MAIL_RETRY_DELAY (${gaps[0]} ms)`)
  t.ok(gaps[1] >= 78, `then twice that (${gaps[1]} ms)`)
  t.ok(gaps[2] >= 158, `then twice again (${gaps[2]} ms)`)
  await new Promise(resolve => setTimeout(resolve, 400))
  t.equal(mailbox.connections.length, 4, 'no attempt after the last')
  t.equal(await sample(server, 'mail_failed_total'), 1)
  t.equal(await sample(server, 'mail_queued'), 0)
  const [row] = await selectAll<{ status: string, attempts: number, body: string, last_error: string }>(t, databaseUrl, 'select status, attempts, body, last_error from mail_outbox')
  t.match(row, { status: 'failed', attempts: 4, body: '' }, 'the link is gone from the store')
  t.match(row.last_error, /421/)
})

t.test('a delivery that later succeeds is marked sent, its body erased', async (t) => {
  const mailbox = await startMailbox(t, { refuse: true })
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, SMTP_URL: mailbox.smtpUrl, MAIL_RETRY_DELAY: '30ms' } })
  await server.mailer.enqueue({ to: 'ada@example.com', subject: 'Hello', text: 'https://example.com/#token=secret' })
  await until(() => mailbox.connections.length >= 2, 'a retry')
  mailbox.refuse = false
  await mailbox.next('ada@example.com', 'Hello')
  await until(async () => await server.mailer.queued() === 0, 'marked sent')
  const [row] = await selectAll<{ status: string, body: string, attempts: number }>(t, databaseUrl, 'select status, body, attempts from mail_outbox')
  t.equal(row.status, 'sent')
  t.equal(row.body, '')
  t.ok(row.attempts >= 3, `${row.attempts} attempts`)
})

/** The service with its log lines collected. */
async function buildWithLog (t: Test, env: Record<string, string>) {
  const lines: Array<Record<string, any>> = []
  const config = testConfig({ LOG_LEVEL: 'info', API_VARIANT: 'header', ...env })
  const server = Fastify({ ...serverOptions(config), logger: { level: 'info', stream: { write: (line: string) => { lines.push(JSON.parse(line)) } } } })
  await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  await server.ready()
  t.teardown(() => server.close())
  return { server, lines }
}

t.test('without SMTP_URL, outside production, mail is disabled and each message is written to the log', async (t) => {
  const { server, lines } = await buildWithLog(t, { PUBLIC_URL: 'http://localhost:5173' })
  t.equal(server.mailer.enabled, false)
  t.ok(lines.some(line => /mail is disabled/.test(line.msg)), 'says so at start')
  const user = await registerUser(server, 'header')
  await server.mailer.idle()
  const logged = lines.find(line => line.mail?.to === user.email)
  t.ok(logged, 'the message is in the log')
  t.match(logged?.mail.text, /http:\/\/localhost:5173\/verify-email#token=[A-Za-z0-9_-]{43}/)
  t.equal(server.mailer.failed, 0)
  t.equal(server.mailer.sent, 0, 'a logged mail was sent nowhere')
  t.equal(await server.mailer.queued(), 0, 'nothing left waiting')
})

t.test('without SMTP_URL in production, mail is disabled and no message (no link) is logged', async (t) => {
  const { server, lines } = await buildWithLog(t, { NODE_ENV: 'production' })
  t.ok(lines.some(line => /mail is disabled/.test(line.msg)))
  const user = await registerUser(server, 'header')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  await server.mailer.idle()
  t.notOk(lines.some(line => JSON.stringify(line).includes('token=')), 'no link in the log')
})

t.test('mail still in the outbox when the service closes goes out after the next start', async (t) => {
  const mailbox = await startMailbox(t, { refuse: true })
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const retryDelayMs = 50
  const config = testConfig({ API_VARIANT: 'header', DATABASE_URL: databaseUrl, SMTP_URL: mailbox.smtpUrl, MAIL_RETRY_DELAY: `${retryDelayMs}ms` })
  const first = Fastify(serverOptions(config))
  await first.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  const user = await registerUser(first, 'header')
  await first.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  await first.mailer.idle()
  await first.close()
  t.equal(mailbox.received.length, 0, 'nothing got through before the close')
  // The refused mail is due again MAIL_RETRY_DELAY after its refusal, which came before the close. A start
  // sooner than that finds nothing due and sends it at the next poll (OUTBOX_POLL_MS, as long as the wait
  // below): what is tested is the mail left due, sent by the next start.
  await sleep(retryDelayMs + 10)

  mailbox.refuse = false
  const second = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, SMTP_URL: mailbox.smtpUrl } })
  const mail = await mailbox.next(user.email, RESET)
  const token = tokenFromLink(mail, 'http://localhost:3000', '/reset-password')
  const reset = await second.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'a brand new password' } })
  t.equal(reset.statusCode, 204)
})

t.test('with SIGNING_KEY_ENCRYPTION_KEY a mail waits in the outbox sealed: the store shows no live link', async (t) => {
  const mailbox = await startMailbox(t, { refuse: true })
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const env = { DATABASE_URL: databaseUrl, SMTP_URL: mailbox.smtpUrl, MAIL_RETRY_DELAY: '30ms', SIGNING_KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64') }
  const server = await build(t, { variant: 'header', env })
  const user = await registerUser(server, 'header')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  await server.mailer.idle()
  const waiting = await selectAll<{ subject: string, body: string }>(t, databaseUrl, "select subject, body from mail_outbox where status = 'pending'")
  t.equal(waiting.length, 2)
  for (const row of waiting) {
    t.match(row.body, /^sealed:v1:/, `${row.subject}: sealed`)
    t.notMatch(row.body, /token=/, 'no link in the store')
  }
  mailbox.refuse = false
  const mail = await mailbox.next(user.email, RESET)
  t.match(mail.text, /http:\/\/localhost:3000\/reset-password#token=[A-Za-z0-9_-]{43}/, 'the mail itself carries the link in clear')
})

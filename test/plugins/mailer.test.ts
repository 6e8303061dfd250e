import { createServer, type AddressInfo } from 'node:net'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../src/app.js'
import { build, testConfig } from '../fixtures/build.js'
import { registerUser } from '../fixtures/factories.js'
import { startMailbox } from '../fixtures/mailbox.js'

/** A port on which nothing listens: a mail server that is down. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

t.test('a mail server that is down changes no answer; each failure is logged and counted', async (t) => {
  const server = await build(t, { variant: 'header', env: { SMTP_URL: `smtp://127.0.0.1:${await closedPort()}` } })
  t.equal(server.mailer.enabled, true)
  const user = await registerUser(server, 'header')
  const known = await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  const unknown = await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: 'nobody@example.com' } })
  t.equal(known.statusCode, 202)
  t.equal(known.body, unknown.body)
  await server.mailer.idle()
  t.equal(server.mailer.failures, 2, 'the verification mail and the reset mail')
  t.equal(server.mailer.sent, 0)
})

/** The service with its log lines collected. */
async function buildWithLog (t: Test, env: Record<string, string>) {
  const lines: Array<Record<string, any>> = []
  const config = testConfig({ LOG_LEVEL: 'info', API_VARIANT: 'header', ...env })
  const server = Fastify({ ...serverOptions(config), logger: { level: 'info', stream: { write: (line: string) => { lines.push(JSON.parse(line)) } } } })
  await server.register(fp(app), { config })
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
  t.match(logged?.mail.text, /http:\/\/localhost:5173\/verify-email\?token=[A-Za-z0-9_-]{43}/)
  t.equal(server.mailer.failures, 0)
})

t.test('without SMTP_URL in production, mail is disabled and no message (no link) is logged', async (t) => {
  const { server, lines } = await buildWithLog(t, { NODE_ENV: 'production' })
  t.ok(lines.some(line => /mail is disabled/.test(line.msg)))
  const user = await registerUser(server, 'header')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  await server.mailer.idle()
  t.notOk(lines.some(line => JSON.stringify(line).includes('token=')), 'no link in the log')
})

t.test('closing the service waits for queued mail, whose jobs still reach the store', async (t) => {
  const mailbox = await startMailbox(t)
  const config = testConfig({ API_VARIANT: 'header', SMTP_URL: mailbox.smtpUrl })
  const server = Fastify(serverOptions(config))
  await server.register(fp(app), { config })
  const user = await registerUser(server, 'header')
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  await server.close()
  t.equal(server.mailer.failures, 0)
  t.equal(server.mailer.sent, 2)
  t.ok(await mailbox.next(user.email, 'Reset your password'))
})

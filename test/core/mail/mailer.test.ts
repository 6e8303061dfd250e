import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { systemClock } from '../../../core/clock.js'
import type { Config } from '../../../core/config.js'
import type { Logger } from '../../../core/logger.js'
import { createMailer, type MailerOptions } from '../../../core/mail/mailer.js'
import { testStore } from '../../fixtures/database.js'
import { startMailbox } from '../../fixtures/mailbox.js'

/** A logger that keeps its lines. */
function recordingLogger () {
  const lines: Array<{ level: string, object?: Record<string, any>, message?: string }> = []
  const at = (level: string) => (objectOrMessage: object | string, message?: string) => {
    lines.push(typeof objectOrMessage === 'string' ? { level, message: objectOrMessage } : { level, object: objectOrMessage as Record<string, any>, message })
  }
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
  return { log, lines }
}

function mailSettings (mail: Partial<Config['mail']> = {}): Config['mail'] {
  return { from: 'service@example.com', publicUrl: 'http://localhost:3000', maxAttempts: 3, retryDelayMs: 50, ...mail }
}

/** A mailer on a fresh store, closed at teardown. */
async function mailerFor (t: Test, options: Partial<MailerOptions> & { smtpUrl?: string } = {}) {
  const { smtpUrl, ...rest } = options
  const store = await testStore(t)
  const { log, lines } = recordingLogger()
  const mailer = await createMailer({ store, clock: systemClock, log }, { nodeEnv: 'test', ...rest, mail: mailSettings({ smtpUrl }) })
  t.teardown(() => mailer.close())
  return { store, mailer, lines }
}

const MESSAGE = { to: 'ada@example.com', subject: 'Hello', text: 'https://example.com/#token=secret' }

t.test('an enqueued mail reaches the mail server once the mailer has started, and counts as sent', async (t) => {
  const mailbox = await startMailbox(t)
  const { mailer } = await mailerFor(t, { smtpUrl: mailbox.smtpUrl })
  t.equal(mailer.enabled, true)
  await mailer.enqueue(MESSAGE)
  mailer.start()
  const received = await mailbox.next(MESSAGE.to, MESSAGE.subject)
  t.match(received.text, /#token=secret/)
  await mailer.idle()
  t.equal(mailer.sent, 1)
  t.equal(await mailer.queued(), 0)
})

t.test('a mail job that fails is logged and counted, never thrown at the caller', async (t) => {
  const { mailer, lines } = await mailerFor(t)
  mailer.send(async () => { throw new Error('store down') })
  await mailer.idle()
  t.equal(mailer.failed, 1)
  t.ok(lines.some(line => line.level === 'error' && line.message === 'mail not queued'))
})

t.test('a job runs after the caller has moved on, and the message it yields is queued', async (t) => {
  const { mailer } = await mailerFor(t, { smtpUrl: 'smtp://127.0.0.1:1' })
  let ran = false
  mailer.send(async () => { ran = true; return MESSAGE })
  t.equal(ran, false, 'not on the caller\'s path')
  await mailer.close()
  t.equal(ran, true, 'close waits for the job')
  t.equal(await mailer.queued(), 1, 'its message waits in the outbox')
})

t.test('without an SMTP server, outside production, a mail is written to the log instead of sent', async (t) => {
  const { mailer, lines } = await mailerFor(t)
  t.equal(mailer.enabled, false)
  t.ok(lines.some(line => /mail is disabled/.test(line.message ?? '')))
  await mailer.enqueue(MESSAGE)
  await mailer.idle()
  t.same(lines.find(line => line.object?.mail !== undefined)?.object?.mail, MESSAGE)
  t.equal(mailer.sent, 0, 'a logged mail went nowhere')
  t.equal(await mailer.queued(), 0)
})

t.test('without an SMTP server in production, no mail (no link) is logged', async (t) => {
  const { mailer, lines } = await mailerFor(t, { nodeEnv: 'production' })
  await mailer.enqueue(MESSAGE)
  await mailer.idle()
  t.notOk(lines.some(line => JSON.stringify(line).includes('token=')))
  t.equal(await mailer.queued(), 0, 'dropped, not left waiting')
})

t.test('with a sealing key the outbox keeps the body sealed, and the mail server receives it in clear', async (t) => {
  const mailbox = await startMailbox(t)
  const { mailer, store } = await mailerFor(t, { smtpUrl: mailbox.smtpUrl, sealingKey: randomBytes(32) })
  const stored = mailer.forOutbox(MESSAGE)
  t.match(stored.text, /^sealed:v1:/)
  t.notMatch(stored.text, /token=/)
  await mailer.enqueue(MESSAGE)
  const [waiting] = await store.claimMails(new Date(), new Date(), 1)
  t.match(waiting.text, /^sealed:v1:/, 'sealed in the store')
  mailer.start()
  const received = await mailbox.next(MESSAGE.to, MESSAGE.subject)
  t.match(received.text, /#token=secret/)
})

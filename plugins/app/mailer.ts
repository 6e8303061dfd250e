import fp from 'fastify-plugin'
import { createTransport } from 'nodemailer'
import type { Config } from '../../src/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    mailer: Mailer
  }
}

export interface MailMessage {
  to: string
  subject: string
  text: string
}

/** A message, or work that yields one (undefined: nothing to send) and runs off the request's path too. */
export type MailJob = MailMessage | (() => Promise<MailMessage | undefined>)

export interface Mailer {
  /**
   * Queues a message and returns at once: a request never waits for mail. A
   * failure (the job's or the mail server's) is logged and counted, never thrown.
   */
  send (job: MailJob): void
  /** Whether SMTP_URL is set; without it messages are logged (outside production) or dropped. */
  readonly enabled: boolean
  /** Messages handed to the mail server, and jobs that failed (for metrics). */
  readonly sent: number
  readonly failures: number
  /** Resolves when every queued job has finished (shutdown, tests). */
  idle (): Promise<void>
}

export interface MailerOptions {
  mail: Config['mail']
  nodeEnv: Config['nodeEnv']
}

// A mail server that accepts the connection and then hangs must not hold a job (or shutdown) for minutes.
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/**
 * Outgoing mail over SMTP (nodemailer, SMTP_URL). Without SMTP_URL mail is
 * disabled; outside production each message is written to the log instead, so
 * the reset and verification links of a local demo can be followed.
 */
export default fp<MailerOptions>(async (fastify, { mail, nodeEnv }) => {
  const log = fastify.log.child({ plugin: 'mailer' })
  const transport = mail.smtpUrl === undefined ? undefined : createTransport({ url: mail.smtpUrl, ...SMTP_TIMEOUTS })
  const logInstead = transport === undefined && nodeEnv !== 'production'
  if (transport === undefined) {
    log.info(logInstead ? 'mail is disabled (SMTP_URL is not set); messages are written to this log' : 'mail is disabled (SMTP_URL is not set)')
  }

  const pending = new Set<Promise<void>>()
  let sent = 0
  let failures = 0

  async function deliver (job: MailJob): Promise<void> {
    const message = typeof job === 'function' ? await job() : job
    if (message === undefined) return
    if (transport === undefined) {
      if (logInstead) log.info({ mail: message }, `mail to ${message.to} (not sent: SMTP_URL is not set)`)
      return
    }
    await transport.sendMail({ from: mail.from, ...message })
    sent += 1
  }

  const mailer: Mailer = {
    send (job) {
      // setImmediate: even the job's own work (a lookup, a token write) starts after the answer has gone.
      const running = new Promise(resolve => setImmediate(resolve))
        .then(() => deliver(job))
        .catch((error: unknown) => {
          failures += 1
          log.error({ err: error }, 'mail not sent')
        })
        .finally(() => { pending.delete(running) })
      pending.add(running)
    },
    enabled: transport !== undefined,
    get sent () { return sent },
    get failures () { return failures },
    async idle () {
      while (pending.size > 0) await Promise.all(pending)
    }
  }
  fastify.decorate('mailer', mailer)
  fastify.addHook('onClose', async () => {
    await mailer.idle()
    transport?.close()
  })
}, { name: 'mailer' })

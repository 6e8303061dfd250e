import type { AccountStore, MailMessage } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { Logger } from '../logger.js'
import { OutboxWorker, type OutboxLife, type OutboxState } from '../outbox/outbox-worker.js'
import { mailQueue, mailSender } from './mail-outbox.js'
import { createSealer, isSealed, UnsealError } from '../secrets/sealing.js'

export type { MailMessage } from '../../db/store.js'

/**
 * A message, or work that runs after the answer: it may yield a message, or write its mail to the
 * outbox itself (in the transaction of the token its link carries) and yield nothing.
 */
export type MailJob = MailMessage | (() => Promise<MailMessage | undefined | void>)

export interface Mailer extends OutboxState {
  /**
   * Runs the job after the answer (a request never waits for mail), writes the message it yields to
   * the outbox, and wakes the worker. A job's failure is logged and counted, never thrown. With `delayMs` it starts
   * that much later (forgot-password: core/accounts/account.ts); idle() and close() wait for it all the same.
   */
  send (job: MailJob, options?: { delayMs?: number }): void
  /** Writes a message to the outbox now (it is durable once this resolves) and wakes the worker. */
  enqueue (message: MailMessage): Promise<void>
  /**
   * The message as the outbox keeps it: with SIGNING_KEY_ENCRYPTION_KEY its body (the link and its
   * token) is sealed, so a copy of the store shows no live link. For mail written by the store itself
   * (store.issueOneTimeToken); send and enqueue apply it on their own.
   */
  forOutbox (message: MailMessage): MailMessage
  /** Whether SMTP_URL is set; without it messages are logged (outside production) or dropped. */
  readonly enabled: boolean
  /** Mails this process handed to the mail server, for metrics (`failed` counts the mails it gave up and the jobs that failed). */
  readonly sent: number
  /** Resolves when every job has finished and every mail due has been tried once (shutdown, tests). */
  idle (): Promise<void>
}

/** The mailer with its worker's life: `start` once the service is up, `close` before the store closes. */
export interface MailerService extends Mailer, OutboxLife {
  /** Queued jobs reach the outbox, deliveries under way finish (within STOP_WAIT_MS), the SMTP transport closes. */
  close (): Promise<void>
}

export interface MailerDependencies {
  store: Pick<AccountStore, 'enqueueMail' | 'countPendingMails' | 'claimMails' | 'markMailSent' | 'retryMail' | 'markMailFailed'>
  /** Dates the mail and schedules its attempts; a test moves it forward instead of sleeping. */
  clock: Clock
  log: Logger
}

export interface MailerOptions {
  mail: Config['mail']
  nodeEnv: Config['nodeEnv']
  /** SIGNING_KEY_ENCRYPTION_KEY: seals the bodies waiting in the outbox. */
  sealingKey?: Buffer
}

// The recipient as associated data: a sealed body copied onto another row does not open.
const sealContext = (to: string) => `mail-outbox ${to}`

/** The message as the outbox keeps it: its body sealed with SIGNING_KEY_ENCRYPTION_KEY when it is set (Mailer.forOutbox). */
function outboxForm (sealingKey?: Buffer): (message: MailMessage) => MailMessage {
  const sealer = sealingKey === undefined ? undefined : createSealer(sealingKey)
  return (message) => sealer === undefined ? message : { ...message, text: sealer.seal(message.text, sealContext(message.to)) }
}

/**
 * A mailer that only writes the outbox, for the CLI: the service's worker (which polls the outbox) sends what it
 * writes, so a command neither needs the mail server nor waits for it.
 */
export function createOutboxWriter (
  { store, clock }: { store: Pick<AccountStore, 'enqueueMail'>, clock: Clock }, { sealingKey }: { sealingKey?: Buffer }
): Pick<Mailer, 'enqueue' | 'forOutbox' | 'wake'> {
  const forOutbox = outboxForm(sealingKey)
  return {
    async enqueue (message) { await store.enqueueMail(forOutbox(message), currentDate(clock)) },
    forOutbox,
    wake () {}
  }
}

// A mail server that accepts the connection and then hangs must not hold a delivery (or shutdown) for minutes.
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/**
 * Outgoing mail through an outbox in the store: a mail is written there first, then a worker
 * (core/outbox/outbox-worker.ts, with mail's sender: core/mail/mail-outbox.ts) sends it over SMTP (nodemailer, SMTP_URL), with retries and
 * exponential backoff up to MAIL_MAX_ATTEMPTS; it survives an SMTP outage and a restart. Without
 * SMTP_URL mail is disabled; outside production each message is written to the log instead, so the
 * reset and verification links of a local demo can be followed.
 */
export async function createMailer ({ store, clock, log }: MailerDependencies, { mail, nodeEnv, sealingKey }: MailerOptions): Promise<MailerService> {
  // nodemailer (about 15 MB) is loaded only when there is an SMTP server to send to.
  const transport = mail.smtpUrl === undefined
    ? undefined
    : (await import('nodemailer')).createTransport({ url: mail.smtpUrl, ...SMTP_TIMEOUTS })
  const logInstead = transport === undefined && nodeEnv !== 'production'
  if (transport === undefined) {
    log.info(logInstead ? 'mail is disabled (SMTP_URL is not set); messages are written to this log' : 'mail is disabled (SMTP_URL is not set)')
  }

  const sealer = sealingKey === undefined ? undefined : createSealer(sealingKey)
  const forOutbox = outboxForm(sealingKey)

  async function deliver (stored: MailMessage): Promise<boolean> {
    let message = stored
    if (isSealed(stored.text)) {
      // Without the key that sealed it the mail cannot be sent: the attempt fails, and the mail is given up in the end.
      if (sealer === undefined) throw new UnsealError('the mail was sealed with SIGNING_KEY_ENCRYPTION_KEY, which is not set')
      message = { ...stored, text: sealer.open(stored.text, sealContext(stored.to)) }
    }
    if (transport === undefined) {
      if (logInstead) log.info({ mail: message }, `mail to ${message.to} (not sent: SMTP_URL is not set)`)
      return false
    }
    await transport.sendMail({ from: mail.from, ...message })
    return true
  }

  const worker = new OutboxWorker({
    queue: mailQueue(store),
    sender: mailSender({ deliver, retryDelayMs: mail.retryDelayMs }),
    clock,
    log,
    maxAttempts: mail.maxAttempts
  })
  const jobs = new Set<Promise<void>>()
  let failedJobs = 0

  const jobsDone = async () => {
    while (jobs.size > 0) await Promise.all(jobs)
  }

  return {
    send (job, { delayMs } = {}) {
      // setImmediate: even the job's own work (a lookup, a token write) starts after the answer has gone.
      const running = new Promise(resolve => delayMs === undefined ? setImmediate(resolve) : setTimeout(resolve, delayMs))
        .then(async () => {
          const message = typeof job === 'function' ? await job() : job
          if (message !== undefined) await store.enqueueMail(forOutbox(message), currentDate(clock))
          worker.wake()
        })
        .catch((error: unknown) => {
          failedJobs += 1
          log.error({ err: error }, 'mail not queued')
        })
        .finally(() => { jobs.delete(running) })
      jobs.add(running)
    },
    async enqueue (message) {
      await store.enqueueMail(forOutbox(message), currentDate(clock))
      worker.wake()
    },
    forOutbox,
    wake: () => worker.wake(),
    enabled: transport !== undefined,
    get sent () { return worker.sent },
    get failed () { return worker.failed + failedJobs },
    queued: () => store.countPendingMails(),
    async idle () {
      await jobsDone()
      await worker.idle()
    },
    start: () => worker.start(),
    async close () {
      await jobsDone()
      await worker.stop()
      transport?.close()
    }
  }
}

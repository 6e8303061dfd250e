import type { AccountStore, ClaimedMail, MailMessage } from '../../db/store.js'
import { storeQueue, type OutboxQueue, type OutboxSender } from '../outbox/outbox-worker.js'

/*
 * The mail outbox's side of the one outbox worker (core/outbox/outbox-worker.ts): its rows in the store,
 * its sender (SMTP, core/mail/mailer.ts), its backoff and its log lines.
 */

/**
 * How long a claimed mail is this worker's: longer than one delivery may take (the SMTP timeouts,
 * 10 + 10 + 30 s), so no other process takes it while this one tries. A crash mid-send leaves the
 * mail claimed this long; then another process (or the restarted one) tries it again.
 */
export const CLAIM_LEASE_MS = 120_000
/**
 * How long shutdown waits for the deliveries under way (a mail server that hangs holds one for up
 * to 50 s): less than close-with-grace's 10 s. A delivery still hanging then is left; its mail stays
 * claimed and is tried again CLAIM_LEASE_MS later, by the next start or another instance.
 */
export const STOP_WAIT_MS = 5_000
/** The longest wait between two attempts, however many there were. */
export const MAX_RETRY_DELAY_MS = 3_600_000

/** The wait after a mail's `attempts`-th failed attempt: `baseMs`, doubled at each further attempt, at most MAX_RETRY_DELAY_MS. */
export function retryDelayMs (attempts: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_RETRY_DELAY_MS)
}

/** The mail outbox's members in the store. */
const MAIL_QUEUE = { claim: 'claimMails', markDone: 'markMailSent', retry: 'retryMail', markFailed: 'markMailFailed' } as const

export type MailQueueStore = Pick<AccountStore, (typeof MAIL_QUEUE)[keyof typeof MAIL_QUEUE]>

/** The mail outbox as the worker reads and marks it. */
export function mailQueue (store: MailQueueStore): OutboxQueue<ClaimedMail> {
  return storeQueue(store, MAIL_QUEUE)
}

export interface MailSenderOptions {
  /** Hands a message over (SMTP); resolves false when it went nowhere (mail disabled), throws when refused. */
  deliver: (message: MailMessage) => Promise<boolean>
  /** MAIL_RETRY_DELAY: the first retry's wait, doubled at each further one. */
  retryDelayMs: number
  /** STOP_WAIT_MS unless given (tests). */
  stopWaitMs?: number
}

/**
 * Mail's sender: each claimed mail handed to the mail server. A failed attempt is retried with exponential
 * backoff (MAIL_RETRY_DELAY, doubled, at most an hour) until MAIL_MAX_ATTEMPTS, then the mail is given up.
 */
export function mailSender ({ deliver, retryDelayMs: baseMs, stopWaitMs = STOP_WAIT_MS }: MailSenderOptions): OutboxSender<ClaimedMail> {
  return {
    send: (mail) => deliver({ to: mail.to, subject: mail.subject, text: mail.text }),
    retryDelayMs: (attempts) => retryDelayMs(attempts, baseMs),
    claimLeaseMs: CLAIM_LEASE_MS,
    stopWaitMs,
    logFields: (mail, { cause }) => ({ err: cause, mailId: mail.id, attempts: mail.attempts }),
    words: { outbox: 'mail', row: 'mail', done: 'sent', again: 'tried again', maxAttemptsSetting: 'MAIL_MAX_ATTEMPTS' }
  }
}

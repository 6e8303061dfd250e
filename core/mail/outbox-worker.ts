import type { AccountStore, ClaimedMail, MailMessage } from '../../db/store.js'
import type { Logger } from '../logger.js'
import { runPeriodically, type PeriodicTask } from '../periodic.js'

/** Mails one worker sends at once: each of these loops claims and sends one mail at a time. */
export const DELIVERY_CONCURRENCY = 4
/**
 * How long a claimed mail is this worker's: longer than one delivery may take (the SMTP timeouts,
 * 10 + 10 + 30 s), so no other process takes it while this one tries. A crash mid-send leaves the
 * mail claimed this long; then another process (or the restarted one) tries it again.
 */
export const CLAIM_LEASE_MS = 120_000
/** How long after a retry's due time its timer wakes the worker (see wakeAt). */
const RETRY_TIMER_SLACK_MS = 5

/** How often the outbox is read for mail that no wake announced: another process's, a retry, a lease that ran out. */
export const OUTBOX_POLL_MS = 5_000
/**
 * How long shutdown waits for the deliveries under way (a mail server that hangs holds one for up
 * to 50 s): less than close-with-grace's 10 s. A delivery still hanging then is left; its mail stays
 * claimed and is tried again CLAIM_LEASE_MS later, by the next start or another instance.
 */
export const STOP_WAIT_MS = 5_000
/** The longest wait between two attempts, however many there were. */
export const MAX_RETRY_DELAY_MS = 3_600_000
/** The part of a delivery error kept with the mail (last_error). */
const ERROR_LENGTH = 500

/** The wait after a mail's `attempts`-th failed attempt: `baseMs`, doubled at each further attempt, at most MAX_RETRY_DELAY_MS. */
export function retryDelayMs (attempts: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_RETRY_DELAY_MS)
}

export interface OutboxWorkerOptions {
  store: Pick<AccountStore, 'claimMails' | 'markMailSent' | 'retryMail' | 'markMailFailed'>
  /** Hands a message over (SMTP); resolves false when it went nowhere (mail disabled), throws when refused. */
  deliver: (message: MailMessage) => Promise<boolean>
  maxAttempts: number
  retryDelayMs: number
  log: Logger
  /** STOP_WAIT_MS unless given (tests). */
  stopWaitMs?: number
}

/**
 * Sends the mail of the outbox. It runs when woken (right after this process queues mail), on a
 * timer, and when a retry falls due; never on a request's path. A failed attempt is retried with
 * exponential backoff until `maxAttempts`, then the mail is given up. Claims are leases in the
 * store, so several processes on one store send each mail once.
 */
export class OutboxWorker {
  /** Mails handed to the mail server, and mails given up, by this process. */
  sent = 0
  failed = 0
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  private poll: PeriodicTask | undefined
  private readonly retryTimers = new Set<NodeJS.Timeout>()

  private readonly options: OutboxWorkerOptions

  constructor (options: OutboxWorkerOptions) {
    this.options = options
  }

  /** Sends what is due now (mail left by a previous run too), and looks again every OUTBOX_POLL_MS. */
  start (): void {
    this.poll = runPeriodically(OUTBOX_POLL_MS, async () => { this.wake() }, {
      onError: (error) => { this.options.log.warn({ err: error }, 'mail outbox not read; trying again shortly') }
    })
    this.wake()
  }

  /** Sends the mail due now; when a round is under way, one more follows it (it may have read before the caller's write). */
  wake (): void {
    if (this.stopped) return
    if (this.running !== undefined) {
      this.again = true
      return
    }
    this.again = false
    // On a turn of its own: a SQLite claim is synchronous, and wake() may be called on a request's path (enqueue).
    this.running = new Promise(resolve => setImmediate(resolve))
      .then(() => this.round())
      .catch((error: unknown) => { this.options.log.warn({ err: error }, 'mail outbox not read; trying again shortly') })
      .finally(() => {
        this.running = undefined
        if (this.again) this.wake()
      })
  }

  /** Resolves when no round is under way (every mail due has been tried once). */
  async idle (): Promise<void> {
    while (this.running !== undefined) await this.running
  }

  /**
   * Takes no more mail; resolves when the deliveries under way have finished, or after STOP_WAIT_MS
   * when one hangs. Unsent mail stays in the outbox.
   */
  async stop (): Promise<void> {
    this.stopped = true
    await this.poll?.stop()
    for (const timer of this.retryTimers) clearTimeout(timer)
    this.retryTimers.clear()
    let timer: NodeJS.Timeout | undefined
    const waited = new Promise<'waited'>(resolve => { timer = setTimeout(() => resolve('waited'), this.options.stopWaitMs ?? STOP_WAIT_MS) })
    const outcome = await Promise.race([this.idle().then(() => 'finished' as const), waited])
    clearTimeout(timer)
    if (outcome === 'waited') this.options.log.warn('shutdown left a mail delivery hanging; its mail will be tried again after the next start')
  }

  private async round (): Promise<void> {
    await Promise.all(Array.from({ length: DELIVERY_CONCURRENCY }, () => this.sendWhileDue()))
  }

  private async sendWhileDue (): Promise<void> {
    while (!this.stopped) {
      const now = new Date()
      const [mail] = await this.options.store.claimMails(now, new Date(now.getTime() + CLAIM_LEASE_MS), 1)
      if (mail === undefined) return
      await this.attempt(mail)
    }
  }

  private async attempt (mail: ClaimedMail): Promise<void> {
    const { store, deliver, maxAttempts, log } = this.options
    let handedOver: boolean
    try {
      handedOver = await deliver({ to: mail.to, subject: mail.subject, text: mail.text })
    } catch (error) {
      const reason = String((error as Error).message ?? error).slice(0, ERROR_LENGTH)
      const now = new Date()
      if (mail.attempts >= maxAttempts) {
        await store.markMailFailed(mail.id, now, reason)
        this.failed += 1
        log.error({ err: error, mailId: mail.id, attempts: mail.attempts }, 'mail given up after MAIL_MAX_ATTEMPTS attempts')
        return
      }
      const retryAt = new Date(now.getTime() + retryDelayMs(mail.attempts, this.options.retryDelayMs))
      await store.retryMail(mail.id, retryAt, reason)
      log.warn({ err: error, mailId: mail.id, attempts: mail.attempts, retryAt }, 'mail not sent; it will be retried')
      this.wakeAt(retryAt)
      return
    }
    // Sent but not marked (the store failed just now): the lease runs out and it goes again; at least once.
    await store.markMailSent(mail.id, new Date())
    if (handedOver) this.sent += 1
  }

  /** Wakes the worker when a retry falls due, without waiting for the next poll. */
  private wakeAt (at: Date): void {
    if (this.stopped) return
    // A timer may fire a millisecond before Date.now() reaches `at` (timers run on the loop's
    // cached monotonic clock): the claim would then find the mail not yet due and the retry would
    // wait for the next poll, OUTBOX_POLL_MS later. The slack keeps the wake after the due time.
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer)
      this.wake()
    }, Math.max(0, at.getTime() - Date.now()) + RETRY_TIMER_SLACK_MS)
    timer.unref()
    this.retryTimers.add(timer)
  }
}

import { currentDate, type Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import { runPeriodically, type PeriodicTask } from '../periodic.js'

/** Rows one worker sends at once: each of these loops claims and sends one row at a time. */
export const DELIVERY_CONCURRENCY = 4
/** How often the outbox is read for rows that no wake announced: another process's, a lease that ran out. */
export const OUTBOX_POLL_MS = 5_000
/** The part of a failure kept with the row (last_error). */
const ERROR_LENGTH = 500
/**
 * How long after a retry's due time its timer wakes the worker. A timer may fire a millisecond before the
 * clock reaches the due time (timers run on the loop's cached monotonic clock): the claim would then find
 * the row not yet due and the retry would wait for the next poll, OUTBOX_POLL_MS later.
 */
const RETRY_TIMER_SLACK_MS = 5

/** A row a worker claimed for one attempt. */
export interface ClaimedRow {
  id: number
  /** Attempts so far, this one included. */
  attempts: number
}

/** One outbox in the store (the mail outbox, the webhook outbox): claims are leases, so several processes send each row once. */
export interface OutboxQueue<Row extends ClaimedRow> {
  claim (now: Date, claimedUntil: Date, limit: number): Promise<Row[]>
  markDone (id: number, now: Date): Promise<void>
  retry (id: number, retryAt: Date, error: string): Promise<void>
  markFailed (id: number, now: Date, error: string): Promise<void>
}

/** The names of an outbox's four members in the store (e.g. claimMails, markMailSent, retryMail, markMailFailed). */
export interface OutboxMemberNames {
  claim: string
  markDone: string
  retry: string
  markFailed: string
}

/** A store that has the members `names` names, each of the queue's shape. */
export type OutboxStore<Row extends ClaimedRow, Names extends OutboxMemberNames> =
  { [Member in keyof OutboxMemberNames as Names[Member]]: OutboxQueue<Row>[Member] }

/** One outbox of the store as the worker reads and marks it: its four members, by name. */
export function storeQueue<Row extends ClaimedRow, const Names extends OutboxMemberNames> (
  store: OutboxStore<Row, Names>, names: Names
): OutboxQueue<Row> {
  // OutboxStore types each named member as the queue's; TypeScript cannot follow a renamed key back to it.
  const members = store as unknown as Record<string, (...args: unknown[]) => Promise<never>>
  const member = (name: keyof OutboxMemberNames) => async (...args: unknown[]) => await members[names[name]].apply(store, args)
  return { claim: member('claim'), markDone: member('markDone'), retry: member('retry'), markFailed: member('markFailed') }
}

/** Why an attempt failed: kept with the row (last_error, cut to 500 characters) and logged with `cause`. */
export interface SendFailure {
  reason: string
  cause?: unknown
}

/** What one kind of outbox sends and how: the sender, its schedule, and the words of its log lines. */
export interface OutboxSender<Row extends ClaimedRow> {
  /**
   * One attempt. Resolves true when the receiver took the row, false when there was nowhere to send it (done,
   * not counted as sent), or to a SendFailure when the receiver refused it; a throw is a failure too (failureReason).
   */
  send (row: Row): Promise<boolean | SendFailure>
  /** The wait after the row's `attempts`-th failed attempt. */
  retryDelayMs (attempts: number): number
  /** How long a claimed row is this worker's: longer than one attempt may take; a crash leaves it claimed this long. */
  claimLeaseMs: number
  /** How long shutdown waits for the attempts under way: less than close-with-grace's 10 s. */
  stopWaitMs: number
  /** The fields of a failed attempt's log line. */
  logFields (row: Row, failure: SendFailure): Record<string, unknown>
  /** The words of its log lines (outboxSays). */
  words: OutboxWords
}

/** What differs in the log lines of two outboxes: what they send, and how they say it. */
export interface OutboxWords {
  /** The outbox's name: "mail", "webhook". */
  outbox: string
  /** What a row is: "mail", "event". */
  row: string
  /** What became of a row that went: "sent", "delivered". */
  done: string
  /** What becomes of a row tried again: "tried again", "delivered again". */
  again: string
  /** The setting that caps the attempts. */
  maxAttemptsSetting: string
}

/** The log lines: the outbox not read, a send left hanging at shutdown, a row given up, a row to retry. */
export function outboxSays ({ outbox, row, done, again, maxAttemptsSetting }: OutboxWords): Record<'unread' | 'hanging' | 'givenUp' | 'retried', string> {
  return {
    unread: `${outbox} outbox not read; trying again shortly`,
    hanging: `shutdown left a ${outbox} delivery hanging; its ${row} will be ${again} after the next start`,
    givenUp: `${outbox} given up after ${maxAttemptsSetting} attempts`,
    retried: `${outbox} not ${done}; it will be retried`
  }
}

/** A thrown error as last_error keeps it: its message, and its cause's (fetch's "fetch failed" says why only there). */
export function failureReason (error: unknown): string {
  const cause = (error as Error).cause instanceof Error ? `: ${((error as Error).cause as Error).message}` : ''
  return `${String((error as Error).message ?? error)}${cause}`
}

/** What the mailer and the webhooks say of their outbox, for metrics, shutdown and tests. */
export interface OutboxState {
  /** Sends the rows due now (the worker also runs on a timer, for retries and other processes' rows). */
  wake (): void
  /** Rows this process gave up, for metrics. */
  readonly failed: number
  /** Rows waiting in the outbox, every process's. */
  queued (): Promise<number>
  /** Resolves when every row due has been tried once (shutdown, tests). */
  idle (): Promise<void>
}

/** The worker's life: `start` once the service is up, `close` before the store closes. */
export interface OutboxLife {
  /** Sends the rows left by a previous run (a crash, an outage), and polls the outbox from now on. */
  start (): void
  /** Deliveries under way finish (within the sender's stopWaitMs); unsent rows stay. */
  close (): Promise<void>
}

export interface OutboxWorkerOptions<Row extends ClaimedRow> {
  queue: OutboxQueue<Row>
  sender: OutboxSender<Row>
  /** The schedule (due times, leases, retries) reads it; a test moves it forward instead of sleeping. */
  clock: Clock
  log: Logger
  maxAttempts: number
}

/**
 * Sends one outbox (core/mail, core/webhooks: the same loop, two senders). It runs when woken (right after
 * this process writes a row), on a timer, and when a retry falls due; never on a request's path. A failed
 * attempt is retried after the sender's delay until `maxAttempts`, then the row is given up and logged.
 */
export class OutboxWorker<Row extends ClaimedRow> {
  /** Rows sent, and rows given up, by this process. */
  sent = 0
  failed = 0
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  private poll: PeriodicTask | undefined
  private readonly retryTimers = new Set<NodeJS.Timeout>()

  private readonly options: OutboxWorkerOptions<Row>
  private readonly says: ReturnType<typeof outboxSays>

  constructor (options: OutboxWorkerOptions<Row>) {
    this.options = options
    this.says = outboxSays(options.sender.words)
  }

  /** Sends what is due now (rows left by a previous run too), and looks again every OUTBOX_POLL_MS. */
  start (): void {
    this.poll = runPeriodically(OUTBOX_POLL_MS, async () => { this.wake() }, {
      onError: (error) => { this.options.log.warn({ err: error }, this.says.unread) }
    })
    this.wake()
  }

  /** Sends the rows due now; when a round is under way, one more follows it (it may have read before the caller's write). */
  wake (): void {
    if (this.stopped) return
    if (this.running !== undefined) {
      this.again = true
      return
    }
    this.again = false
    // On a turn of its own: a SQLite claim is synchronous, and wake() is called on a request's path.
    this.running = new Promise(resolve => setImmediate(resolve))
      .then(() => this.round())
      .catch((error: unknown) => { this.options.log.warn({ err: error }, this.says.unread) })
      .finally(() => {
        this.running = undefined
        if (this.again) this.wake()
      })
  }

  /** Resolves when no round is under way (every row due has been tried once). */
  async idle (): Promise<void> {
    while (this.running !== undefined) await this.running
  }

  /** Takes no more rows; resolves when the attempts under way have finished, or after the sender's stopWaitMs. Unsent rows stay. */
  async stop (): Promise<void> {
    this.stopped = true
    await this.poll?.stop()
    for (const timer of this.retryTimers) clearTimeout(timer)
    this.retryTimers.clear()
    let timer: NodeJS.Timeout | undefined
    const waited = new Promise<'waited'>(resolve => { timer = setTimeout(() => resolve('waited'), this.options.sender.stopWaitMs) })
    const outcome = await Promise.race([this.idle().then(() => 'finished' as const), waited])
    clearTimeout(timer)
    if (outcome === 'waited') this.options.log.warn(this.says.hanging)
  }

  private async round (): Promise<void> {
    await Promise.all(Array.from({ length: DELIVERY_CONCURRENCY }, () => this.sendWhileDue()))
  }

  private async sendWhileDue (): Promise<void> {
    const { queue, clock, sender } = this.options
    while (!this.stopped) {
      const now = currentDate(clock)
      const [row] = await queue.claim(now, new Date(now.getTime() + sender.claimLeaseMs), 1)
      if (row === undefined) return
      await this.attempt(row)
    }
  }

  private async attempt (row: Row): Promise<void> {
    const { queue, sender, clock, log, maxAttempts } = this.options
    let outcome: boolean | SendFailure
    try {
      outcome = await sender.send(row)
    } catch (error) {
      outcome = { reason: failureReason(error), cause: error }
    }
    const now = currentDate(clock)
    if (typeof outcome === 'boolean') {
      // Sent but not marked (the store failed just now): the lease runs out and it goes again; at least once.
      await queue.markDone(row.id, now)
      if (outcome) this.sent += 1
      return
    }
    const failure = { ...outcome, reason: outcome.reason.slice(0, ERROR_LENGTH) }
    if (row.attempts >= maxAttempts) {
      await queue.markFailed(row.id, now, failure.reason)
      this.failed += 1
      log.error(sender.logFields(row, failure), this.says.givenUp)
      return
    }
    const retryAt = new Date(now.getTime() + sender.retryDelayMs(row.attempts))
    await queue.retry(row.id, retryAt, failure.reason)
    log.warn({ ...sender.logFields(row, failure), retryAt }, this.says.retried)
    this.wakeAt(retryAt)
  }

  /** Wakes the worker when a retry falls due, without waiting for the next poll. */
  private wakeAt (at: Date): void {
    if (this.stopped) return
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer)
      this.wake()
    }, Math.max(0, at.getTime() - this.options.clock.now()) + RETRY_TIMER_SLACK_MS)
    timer.unref()
    this.retryTimers.add(timer)
  }
}

import { Webhook } from 'standardwebhooks'
import type { AccountStore, ClaimedWebhook } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import { runPeriodically, type PeriodicTask } from '../periodic.js'

/** Deliveries one worker makes at once: each of these loops claims and POSTs one event at a time. */
export const DELIVERY_CONCURRENCY = 4
/** How long one POST may take, from the connection to the answer's headers; past it the attempt failed. */
export const DELIVERY_TIMEOUT_MS = 5_000
/**
 * How long a claimed event is this worker's: far longer than a delivery may take, so no other
 * process takes it while this one tries. A crash mid-delivery leaves it claimed this long; then
 * another process (or the restarted one) delivers it again, with the same webhook-id.
 */
export const CLAIM_LEASE_MS = 60_000
/** How often the outbox is read for events that no wake announced: another process's, a lease that ran out. */
export const OUTBOX_POLL_MS = 5_000
/** How long shutdown waits for the deliveries under way: at least one timeout, less than close-with-grace's 10 s. */
export const STOP_WAIT_MS = 6_000
/** The waits after the 1st, 2nd, ... failed attempt; the last one repeats. The first retry comes within 30 s. */
export const RETRY_DELAYS_MS = [30_000, 120_000, 600_000, 1_800_000, 3_600_000] as const
/** The part of a delivery error kept with the event (last_error). */
const ERROR_LENGTH = 500
/** How long after a retry's due time its timer wakes the worker (a timer may fire a little early). */
const RETRY_TIMER_SLACK_MS = 5

/** The wait after an event's `attempts`-th failed attempt. */
export function retryDelayMs (attempts: number): number {
  return RETRY_DELAYS_MS[Math.min(Math.max(attempts, 1), RETRY_DELAYS_MS.length) - 1]
}

export interface WebhookWorkerOptions {
  store: Pick<AccountStore, 'claimWebhooks' | 'markWebhookDelivered' | 'retryWebhook' | 'markWebhookFailed'>
  /** The schedule (due times, leases, retries) reads it; a test moves it forward instead of sleeping. */
  clock: Clock
  log: Logger
  url: string
  /** `whsec_…` (Standard Webhooks). */
  secret: string
  maxAttempts: number
  /** DELIVERY_TIMEOUT_MS and STOP_WAIT_MS unless given (tests). */
  timeoutMs?: number
  stopWaitMs?: number
}

/**
 * Delivers the webhook outbox: each event POSTed to WEBHOOK_URL, signed per Standard Webhooks
 * (webhook-id, webhook-timestamp, webhook-signature). A 2xx answer is a delivery; anything else
 * (another status, a refused connection, no answer within DELIVERY_TIMEOUT_MS) is retried after
 * RETRY_DELAYS_MS until `maxAttempts`, then the event is given up and logged. It runs when woken
 * (right after this process writes an event), on a timer, and when a retry falls due; never on a
 * request's path. Claims are leases in the store, so several processes deliver each event once
 * (again only when an answer was lost: receivers deduplicate by webhook-id).
 */
export class WebhookWorker {
  /** Events delivered, and events given up, by this process. */
  delivered = 0
  failed = 0
  private readonly signer: Webhook
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  private poll: PeriodicTask | undefined
  private readonly retryTimers = new Set<NodeJS.Timeout>()

  private readonly options: WebhookWorkerOptions

  constructor (options: WebhookWorkerOptions) {
    this.options = options
    this.signer = new Webhook(options.secret)
  }

  /** Delivers what is due now (events left by a previous run too), and looks again every OUTBOX_POLL_MS. */
  start (): void {
    this.poll = runPeriodically(OUTBOX_POLL_MS, async () => { this.wake() }, {
      onError: (error) => { this.options.log.warn({ err: error }, 'webhook outbox not read; trying again shortly') }
    })
    this.wake()
  }

  /** Delivers the events due now; when a round is under way, one more follows it (it may have read before the caller's write). */
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
      .catch((error: unknown) => { this.options.log.warn({ err: error }, 'webhook outbox not read; trying again shortly') })
      .finally(() => {
        this.running = undefined
        if (this.again) this.wake()
      })
  }

  /** Resolves when no round is under way (every event due has been tried once). */
  async idle (): Promise<void> {
    while (this.running !== undefined) await this.running
  }

  /** Takes no more events; resolves when the deliveries under way have finished, or after STOP_WAIT_MS. Undelivered events stay in the outbox. */
  async stop (): Promise<void> {
    this.stopped = true
    await this.poll?.stop()
    for (const timer of this.retryTimers) clearTimeout(timer)
    this.retryTimers.clear()
    let timer: NodeJS.Timeout | undefined
    const waited = new Promise<'waited'>(resolve => { timer = setTimeout(() => resolve('waited'), this.options.stopWaitMs ?? STOP_WAIT_MS) })
    const outcome = await Promise.race([this.idle().then(() => 'finished' as const), waited])
    clearTimeout(timer)
    if (outcome === 'waited') this.options.log.warn('shutdown left a webhook delivery hanging; its event will be delivered again after the next start')
  }

  private async round (): Promise<void> {
    await Promise.all(Array.from({ length: DELIVERY_CONCURRENCY }, () => this.deliverWhileDue()))
  }

  private async deliverWhileDue (): Promise<void> {
    const { store, clock } = this.options
    while (!this.stopped) {
      const now = currentDate(clock)
      const [event] = await store.claimWebhooks(now, new Date(now.getTime() + CLAIM_LEASE_MS), 1)
      if (event === undefined) return
      await this.attempt(event)
    }
  }

  /** One POST of the event; resolves to why it failed, or undefined when the receiver took it. */
  private async post (event: ClaimedWebhook): Promise<string | undefined> {
    // The signature's time is the wall clock's: the receiver compares it with its own to refuse replays.
    const sentAt = new Date()
    const response = await fetch(this.options.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'account-service-webhooks',
        'webhook-id': event.messageId,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': this.signer.sign(event.messageId, sentAt, event.payload)
      },
      body: event.payload,
      // A redirect is no delivery (and following one would send the event where nobody configured).
      redirect: 'manual',
      signal: AbortSignal.timeout(this.options.timeoutMs ?? DELIVERY_TIMEOUT_MS)
    })
    // The answer's body is not read, only released.
    await response.body?.cancel().catch(() => {})
    return response.status >= 200 && response.status < 300 ? undefined : `HTTP ${response.status}`
  }

  private async attempt (event: ClaimedWebhook): Promise<void> {
    const { store, clock, log, maxAttempts } = this.options
    let failure: string | undefined
    let cause: unknown
    try {
      failure = await this.post(event)
    } catch (error) {
      cause = error
      const reason = (error as Error).cause instanceof Error ? `: ${((error as Error).cause as Error).message}` : ''
      failure = `${String((error as Error).message ?? error)}${reason}`
    }
    const now = currentDate(clock)
    if (failure === undefined) {
      // Delivered but not marked (the store failed just now): the lease runs out and it goes again, with the same webhook-id.
      await store.markWebhookDelivered(event.id, now)
      this.delivered += 1
      return
    }
    const reason = failure.slice(0, ERROR_LENGTH)
    const context = { err: cause, webhookId: event.messageId, type: event.type, attempts: event.attempts, error: reason }
    if (event.attempts >= maxAttempts) {
      await store.markWebhookFailed(event.id, now, reason)
      this.failed += 1
      log.error(context, 'webhook given up after WEBHOOK_MAX_ATTEMPTS attempts')
      return
    }
    const retryAt = new Date(now.getTime() + retryDelayMs(event.attempts))
    await store.retryWebhook(event.id, retryAt, reason)
    log.warn({ ...context, retryAt }, 'webhook not delivered; it will be retried')
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

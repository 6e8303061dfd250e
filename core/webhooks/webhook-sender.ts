import { Webhook } from 'standardwebhooks'
import type { AccountStore, ClaimedWebhook } from '../../db/store.js'
import { storeQueue, type OutboxQueue, type OutboxSender } from '../outbox/outbox-worker.js'

/*
 * The webhook outbox's side of the one outbox worker (core/outbox/outbox-worker.ts): its rows in the
 * store, its sender (the signed POST), its retry schedule and its log lines.
 */

/** How long one POST may take, from the connection to the answer's headers; past it the attempt failed. */
export const DELIVERY_TIMEOUT_MS = 5_000
/**
 * How long a claimed event is this worker's: far longer than a delivery may take, so no other
 * process takes it while this one tries. A crash mid-delivery leaves it claimed this long; then
 * another process (or the restarted one) delivers it again, with the same webhook-id.
 */
export const CLAIM_LEASE_MS = 60_000
/** How long shutdown waits for the deliveries under way: at least one timeout, less than close-with-grace's 10 s. */
export const STOP_WAIT_MS = 6_000
/** The waits after the 1st, 2nd, ... failed attempt; the last one repeats. The first retry comes within 30 s. */
export const RETRY_DELAYS_MS = [30_000, 120_000, 600_000, 1_800_000, 3_600_000] as const

/** The wait after an event's `attempts`-th failed attempt. */
export function retryDelayMs (attempts: number): number {
  return RETRY_DELAYS_MS[Math.min(Math.max(attempts, 1), RETRY_DELAYS_MS.length) - 1]
}

/** The webhook outbox's members in the store. */
const WEBHOOK_QUEUE = { claim: 'claimWebhooks', markDone: 'markWebhookDelivered', retry: 'retryWebhook', markFailed: 'markWebhookFailed' } as const

export type WebhookQueueStore = Pick<AccountStore, (typeof WEBHOOK_QUEUE)[keyof typeof WEBHOOK_QUEUE]>

/** The webhook outbox as the worker reads and marks it. */
export function webhookQueue (store: WebhookQueueStore): OutboxQueue<ClaimedWebhook> {
  return storeQueue(store, WEBHOOK_QUEUE)
}

export interface WebhookSenderOptions {
  url: string
  /** `whsec_…` (Standard Webhooks). */
  secret: string
  /** DELIVERY_TIMEOUT_MS and STOP_WAIT_MS unless given (tests). */
  timeoutMs?: number
  stopWaitMs?: number
}

/**
 * Webhooks' sender: each event POSTed to WEBHOOK_URL, signed per Standard Webhooks (webhook-id,
 * webhook-timestamp, webhook-signature). A 2xx answer is a delivery; anything else (another status, a
 * refused connection, no answer within DELIVERY_TIMEOUT_MS) is retried after RETRY_DELAYS_MS until
 * WEBHOOK_MAX_ATTEMPTS, then the event is given up and logged. An event is delivered again only when an
 * answer was lost: receivers deduplicate by webhook-id.
 */
export function webhookSender ({ url, secret, timeoutMs = DELIVERY_TIMEOUT_MS, stopWaitMs = STOP_WAIT_MS }: WebhookSenderOptions): OutboxSender<ClaimedWebhook> {
  const signer = new Webhook(secret)
  return {
    async send (event) {
      // The signature's time is the wall clock's: the receiver compares it with its own to refuse replays.
      const sentAt = new Date()
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'account-service-webhooks',
          'webhook-id': event.messageId,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signer.sign(event.messageId, sentAt, event.payload)
        },
        body: event.payload,
        // A redirect is no delivery (and following one would send the event where nobody configured).
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs)
      })
      // The answer's body is not read, only released.
      await response.body?.cancel().catch(() => {})
      return response.status >= 200 && response.status < 300 ? true : { reason: `HTTP ${response.status}` }
    },
    retryDelayMs,
    claimLeaseMs: CLAIM_LEASE_MS,
    stopWaitMs,
    logFields: (event, { reason, cause }) => ({ err: cause, webhookId: event.messageId, type: event.type, attempts: event.attempts, error: reason }),
    words: { outbox: 'webhook', row: 'event', done: 'delivered', again: 'delivered again', maxAttemptsSetting: 'WEBHOOK_MAX_ATTEMPTS' }
  }
}

/** An event as the service writes it to the webhook outbox: the body is final, so each retry sends (and signs) the same bytes. */
export interface WebhookMessage {
  /** The `webhook-id` header: unique, the same on every attempt (receivers deduplicate by it). */
  messageId: string
  /** The event type (`user.created`, ...), for an operator reading the table. */
  type: string
  /** The JSON body, as sent. */
  payload: string
}

/**
 * An event written with the change it reports, in the change's own transaction (the transactional outbox,
 * as mail is): the change and its event are both stored or neither. `createdAt` is the service clock's now:
 * the event is due from then.
 */
export interface OutgoingWebhook extends WebhookMessage {
  createdAt: Date
}

/** The event of a change, built from what the change wrote (a new user's id, the user as changed); undefined sends none (no WEBHOOK_URL). */
export type WebhookOf<Written> = (written: Written) => OutgoingWebhook | undefined

/** An event a worker claimed from the outbox for one delivery attempt. */
export interface ClaimedWebhook extends WebhookMessage {
  id: number
  /** Attempts so far, this one included. */
  attempts: number
}

/** The webhook outbox: events written as they happen, claimed and delivered by the workers of every instance (like the mail outbox). */
export interface WebhookOutboxStore {
  /** Writes events to the outbox, due at once, in one statement. */
  enqueueWebhooks (messages: WebhookMessage[], now: Date): Promise<void>
  /**
   * Claims up to `limit` pending events due at `now` that no live claim holds, oldest first: each gets
   * the lease `claimedUntil` and one more attempt, atomically, so no other process (or instance) claims
   * it before the lease ends.
   */
  claimWebhooks (now: Date, claimedUntil: Date, limit: number): Promise<ClaimedWebhook[]>
  /** The receiver took it (2xx): erases its body and ends its claim. */
  markWebhookDelivered (id: number, now: Date): Promise<void>
  /** The attempt failed: the event is due again at `retryAt`, unclaimed. */
  retryWebhook (id: number, retryAt: Date, error: string): Promise<void>
  /** The last attempt failed: the event is given up (its body stays until pruned, for an operator to look at). */
  markWebhookFailed (id: number, now: Date, error: string): Promise<void>
  /** Events neither delivered nor given up. */
  countPendingWebhooks (): Promise<number>
  /** Deletes up to `limit` events delivered or given up before `finishedBefore`; returns how many (pruning calls again while it returns `limit`). */
  pruneWebhooks (finishedBefore: Date, limit: number): Promise<number>
}

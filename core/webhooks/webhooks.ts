import { randomBytes } from 'node:crypto'
import type { AccountStore, OutgoingWebhook, UserRecord, WebhookOf } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { SecurityEvents, SecurityEventSubscriber } from '../events/security-events.js'
import type { Logger } from '../logger.js'
import { OutboxWorker, type OutboxLife, type OutboxState } from '../outbox/outbox-worker.js'
import { webhookQueue, webhookSender } from './webhook-sender.js'
import { WEBHOOK_OF_SECURITY_EVENT, type OrgWebhookType, type UserWebhookType, type WebhookType } from './types.js'

export { WEBHOOK_TYPES, type OrgWebhookType, type UserWebhookType, type WebhookType } from './types.js'

/** The user as an event shows it: as the admin API does (the admin presenter). */
export type PresentUser = (user: UserRecord) => Record<string, unknown>

export interface Webhooks extends OutboxState {
  /** Whether WEBHOOK_URL is set; without it nothing is written or sent. */
  readonly enabled: boolean
  /**
   * Writes an event that no change carries to the outbox, alone, and wakes the worker. Never throws: a
   * store error is logged. A change's event goes with the change instead (userEvent, ofSecurityEvent).
   */
  emit (type: WebhookType, data: Record<string, unknown>): Promise<void>
  /**
   * A `user.*` event as the store writes it in the change's own transaction (createUser, updateUser,
   * deleteUser): `data` is the user as the admin API shows it. Undefined without WEBHOOK_URL (the store then
   * writes the change alone). The caller wakes the worker once the change is stored.
   */
  userEvent (type: UserWebhookType): WebhookOf<UserRecord> | undefined
  /**
   * An `org.*` event with its `data`, for the store to write in the change's transaction with its security event
   * (core/organisations); undefined without WEBHOOK_URL. The caller wakes the worker once the change is stored.
   */
  orgEvent (type: OrgWebhookType, data: Record<string, unknown>): OutgoingWebhook | undefined
  /** Events this process delivered, for metrics. */
  readonly delivered: number
}

/** The webhooks with their worker's life: `start` once the service is up, `close` before the store closes. */
export type WebhooksService = Webhooks & OutboxLife

export interface WebhooksDependencies {
  store: Pick<AccountStore, 'enqueueWebhooks' | 'countPendingWebhooks' | 'claimWebhooks' | 'markWebhookDelivered' |
    'retryWebhook' | 'markWebhookFailed' | 'findUserById'>
  clock: Clock
  log: Logger
  /** The webhooks subscribe to them (with WEBHOOK_URL): each event they map to is written with the event. */
  securityEvents?: Pick<SecurityEvents, 'subscribe'>
  /** How a `user.*` event shows the user. */
  presentUser: PresentUser
}

export interface WebhooksOptions {
  /** Config['webhooks']: undefined without WEBHOOK_URL. */
  webhooks?: { url: string, secret: string, maxAttempts: number }
  /** The sender's DELIVERY_TIMEOUT_MS and STOP_WAIT_MS (tests). */
  timeoutMs?: number
  stopWaitMs?: number
}

/** A webhook-id: `msg_` and 128 random bits, unique across instances and restarts. */
export function newMessageId (): string {
  return `msg_${randomBytes(16).toString('base64url')}`
}

/**
 * Signed webhooks from a durable outbox (docs/webhooks.md): an event is written to the store in the
 * same transaction as the change it reports (the user change, the security event), with its final
 * body `{ type, timestamp, data }` and its webhook-id, so both are stored or neither; then a worker
 * (core/outbox/outbox-worker.ts, with the signed POST of core/webhooks/webhook-sender.ts) sends it to WEBHOOK_URL
 * with retries; it survives a receiver outage and a restart. Security events reach it through a subscription
 * (securityEventSubscriber). Without WEBHOOK_URL every call is a no-op.
 */
export function createWebhooks ({ store, clock, log, presentUser, securityEvents }: WebhooksDependencies, options: WebhooksOptions): WebhooksService {
  const settings = options.webhooks
  const worker = settings === undefined
    ? undefined
    : new OutboxWorker({
      queue: webhookQueue(store),
      sender: webhookSender({ url: settings.url, secret: settings.secret, timeoutMs: options.timeoutMs, stopWaitMs: options.stopWaitMs }),
      clock,
      log,
      maxAttempts: settings.maxAttempts
    })

  /** The event with its final body, stamped now; undefined without WEBHOOK_URL. */
  function message (type: WebhookType, data: Record<string, unknown>): OutgoingWebhook | undefined {
    if (worker === undefined) return undefined
    const createdAt = currentDate(clock)
    return { messageId: newMessageId(), type, payload: JSON.stringify({ type, timestamp: createdAt.toISOString(), data }), createdAt }
  }

  /**
   * What the webhooks hear of the security events: the event each maps to (WEBHOOK_OF_SECURITY_EVENT), written
   * with it. `session.*` and `password.changed` carry `{ user_id, session_id? }`; `user.*` the user as it is
   * now (read here: a store error throws, and the security event is then not written either).
   */
  const securityEventSubscriber: SecurityEventSubscriber = {
    async outboxRowOf (eventType, { userId, sessionId }) {
      const type = WEBHOOK_OF_SECURITY_EVENT[eventType]
      if (type === undefined || userId === null) return undefined
      if (type.startsWith('user.')) {
        const user = await store.findUserById(userId)
        return user === undefined ? undefined : message(type, presentUser(user))
      }
      return message(type, { user_id: userId, ...(sessionId == null ? {} : { session_id: sessionId }) })
    },
    stored: () => worker?.wake()
  }
  if (worker !== undefined) securityEvents?.subscribe(securityEventSubscriber)

  return {
    enabled: worker !== undefined,
    async emit (type, data) {
      const event = message(type, data)
      if (event === undefined) return
      try {
        await store.enqueueWebhooks([event], event.createdAt)
        worker?.wake()
      } catch (error) {
        log.error({ err: error, webhookType: type }, 'webhook event not written to the outbox')
      }
    },
    userEvent: (type) => worker === undefined ? undefined : (user) => message(type, presentUser(user)),
    orgEvent: (type, data) => message(type, data),
    wake: () => worker?.wake(),
    get delivered () { return worker?.sent ?? 0 },
    get failed () { return worker?.failed ?? 0 },
    queued: () => store.countPendingWebhooks(),
    idle: async () => { await worker?.idle() },
    start: () => worker?.start(),
    close: async () => { await worker?.stop() }
  }
}

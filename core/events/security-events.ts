import type { AccountStore, NewSecurityEvent, OutgoingWebhook, SecurityEventRecord, SecurityEventWrite } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import type { Client, SecurityEventType } from './types.js'

export { SECURITY_EVENT_TYPES, type Client, type SecurityEventType } from './types.js'

/** What an event is about. */
export interface EventSubject {
  /** Null for a failed login of an email that has no account. */
  userId: number | null
  sessionId?: string | null
  detail?: Record<string, unknown>
  /** The admin who acted (admin API, CLI). */
  actorId?: number | null
}

/**
 * Who hears the events recorded (core/webhooks subscribes): the outbox row it writes with an event, in the
 * event's own transaction, and what it does once both are stored. Events publish; they know no subscriber.
 */
export interface SecurityEventSubscriber {
  /** The row the event also sends, or undefined. Read before the write: a throw stores neither. */
  outboxRowOf (type: SecurityEventType, subject: { userId: number | null, sessionId: string | null }): Promise<OutgoingWebhook | undefined>
  /** The event and its row are stored (the webhook worker wakes). */
  stored (): void
}

export interface SecurityEvents {
  /**
   * Stores the event, with its subscriber's outbox row in the same transaction, and logs it as one line with an
   * `event` field. Never fails the request that caused it: a store error is logged instead (the action
   * itself already happened), and neither the event nor its row is stored.
   */
  record (type: SecurityEventType, client: Client, subject: EventSubject): Promise<void>
  /**
   * The event and its subscriber's row, for a store method to write in the transaction of the change it reports
   * (an admin's audit row: the change and its row, or neither); `published` once that change is stored.
   */
  prepare (type: SecurityEventType, client: Client, subject: EventSubject): Promise<SecurityEventWrite>
  /** Logs a prepared event that its change stored, and tells the subscriber. */
  published (write: SecurityEventWrite): void
  /** The user's events, newest first, older than the event `beforeId` when given. */
  list (userId: number, page: { limit: number, beforeId?: number }): Promise<SecurityEventRecord[]>
  /** The one subscriber (core/webhooks): what it writes with each event, and hears once stored. */
  subscribe (subscriber: SecurityEventSubscriber): void
}

export interface SecurityEventsDependencies {
  store: Pick<AccountStore, 'recordSecurityEvent' | 'listSecurityEvents'>
  clock: Clock
  log: Logger
}

/**
 * Security events: a record per login, failure, lockout, password or email
 * change, revoked session, detected refresh-token reuse, re-authentication,
 * second factor turned on or off, wrong second-factor code, second factor locked (MFA_MAX_WRONG_CODES), recovery code used or renewed,
 * passkey added, removed or used to log in, and passkey counter regression (a cloned authenticator),
 * kept SECURITY_EVENT_RETENTION (an admin's actions AUDIT_RETENTION; pruned with the refresh tokens). Its
 * subscriber (with WEBHOOK_URL, the webhooks: core/webhooks/types.ts maps the events they send) writes its
 * outbox row in the event's own transaction. The user sees
 * its own at GET /auth/security-events; an operator with `account-service events`.
 */
export function createSecurityEvents ({ store, clock, log }: SecurityEventsDependencies): SecurityEvents {
  let subscriber: SecurityEventSubscriber | undefined

  /** The event's row, stamped now. */
  function eventOf (type: SecurityEventType, client: Client, { userId, sessionId = null, detail, actorId = null }: EventSubject): NewSecurityEvent {
    const { ip, userAgent, requestId } = client
    return { type, userId, sessionId, ip, userAgent, requestId, detail: detail ?? null, actorId, createdAt: currentDate(clock) }
  }

  /** The event as one log line with an `event` field. */
  function logLine ({ type, userId, sessionId, actorId, ip, requestId }: NewSecurityEvent): void {
    log.info({ event: type, userId, sessionId, actorId: actorId ?? undefined, ip, reqId: requestId }, `security event: ${type}`)
  }

  /** The event with its subscriber's row, if any. */
  async function withRow (type: SecurityEventType, event: NewSecurityEvent): Promise<SecurityEventWrite> {
    const webhook = await subscriber?.outboxRowOf(type, { userId: event.userId, sessionId: event.sessionId })
    return webhook === undefined ? { event } : { event, webhook }
  }

  return {
    async record (type, client, subject) {
      const event = eventOf(type, client, subject)
      logLine(event)
      try {
        const { webhook } = await withRow(type, event)
        await store.recordSecurityEvent(event, webhook)
        if (webhook !== undefined) subscriber?.stored()
      } catch (error) {
        log.error({ err: error, event: type, userId: event.userId }, 'security event not stored (nor its webhook)')
      }
    },
    prepare: async (type, client, subject) => await withRow(type, eventOf(type, client, subject)),
    published (write) {
      logLine(write.event)
      if (write.webhook !== undefined) subscriber?.stored()
    },
    list: (userId, page) => store.listSecurityEvents(userId, page),
    subscribe (next) {
      // The store writes one outbox row with an event: a second subscriber would have nowhere to go.
      if (subscriber !== undefined) throw new Error('security events have a subscriber already')
      subscriber = next
    }
  }
}

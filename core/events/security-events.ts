import type { AccountStore, SecurityEventRecord } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import type { Webhooks } from '../webhooks/webhooks.js'
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

export interface SecurityEvents {
  /**
   * Stores the event, with the webhook it sends in the same transaction, and logs it as one line with an
   * `event` field. Never fails the request that caused it: a store error is logged instead (the action
   * itself already happened), and neither the event nor its webhook is stored.
   */
  record (type: SecurityEventType, client: Client, subject: EventSubject): Promise<void>
  /** The user's events, newest first, older than the event `beforeId` when given. */
  list (userId: number, page: { limit: number, beforeId?: number }): Promise<SecurityEventRecord[]>
}

export interface SecurityEventsDependencies {
  store: Pick<AccountStore, 'recordSecurityEvent' | 'listSecurityEvents'>
  clock: Clock
  log: Logger
  /** The webhook each event maps to (core/webhooks/types.ts) is written with it, in one transaction; none without WEBHOOK_URL. */
  webhooks?: Pick<Webhooks, 'ofSecurityEvent' | 'wake'>
}

/**
 * Security events: a record per login, failure, lockout, password or email
 * change, revoked session, detected refresh-token reuse, re-authentication,
 * second factor turned on or off, wrong second-factor code, second factor locked (MFA_MAX_WRONG_CODES), recovery code used or renewed,
 * passkey added, removed or used to log in, and passkey counter regression (a cloned authenticator),
 * kept SECURITY_EVENT_RETENTION (an admin's actions AUDIT_RETENTION; pruned with the refresh tokens). With WEBHOOK_URL, the logins, ended
 * sessions, password, second-factor and email changes are also written to the webhook outbox, in the event's
 * own transaction. The user sees
 * its own at GET /auth/security-events; an operator with `account-service events`.
 */
export function createSecurityEvents ({ store, clock, log, webhooks }: SecurityEventsDependencies): SecurityEvents {
  return {
    async record (type, client, { userId, sessionId = null, detail, actorId = null }) {
      log.info({ event: type, userId, sessionId, actorId: actorId ?? undefined, ip: client.ip, reqId: client.requestId }, `security event: ${type}`)
      try {
        const webhook = await webhooks?.ofSecurityEvent(type, { userId, sessionId })
        await store.recordSecurityEvent({
          type,
          userId,
          sessionId,
          ip: client.ip,
          userAgent: client.userAgent,
          requestId: client.requestId,
          detail: detail ?? null,
          actorId,
          createdAt: currentDate(clock)
        }, webhook)
        if (webhook !== undefined) webhooks?.wake()
      } catch (error) {
        log.error({ err: error, event: type, userId }, 'security event not stored (nor its webhook)')
      }
    },
    list: (userId, page) => store.listSecurityEvents(userId, page)
  }
}

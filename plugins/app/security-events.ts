import fp from 'fastify-plugin'
import type { SecurityEventRecord } from '../../db/store.js'

declare module 'fastify' {
  interface FastifyInstance {
    securityEvents: SecurityEvents
  }
}

/** Every kind of security event, as stored and as GET /auth/security-events shows it. */
export const SECURITY_EVENT_TYPES = [
  'login', 'login_failed', 'account_locked', 'password_changed', 'password_reset', 'email_changed',
  'session_revoked', 'refresh_token_reused', 'reauthenticated', 'identity_linked', 'identity_unlinked',
  'passkey_added', 'passkey_removed', 'passkey_login', 'passkey_counter_regressed',
  'mfa_enabled', 'mfa_disabled', 'mfa_failed', 'mfa_locked', 'recovery_code_used', 'recovery_codes_renewed'
] as const

export type SecurityEventType = typeof SECURITY_EVENT_TYPES[number]

/** Who made a request, as events and sessions record it. */
export interface Client {
  ip: string | null
  userAgent: string | null
  /** The request id (X-Request-Id), so an event leads to the request's log lines. */
  requestId: string | null
}

/** What an event is about. */
export interface EventSubject {
  /** Null for a failed login of an email that has no account. */
  userId: number | null
  sessionId?: string | null
  detail?: Record<string, unknown>
}

export interface SecurityEvents {
  /**
   * Stores the event and logs it as one line with an `event` field. Never fails the request that
   * caused it: a store error is logged instead (the action itself already happened).
   */
  record (type: SecurityEventType, client: Client, subject: EventSubject): Promise<void>
  /** The user's events, newest first, older than the event `beforeId` when given. */
  list (userId: number, page: { limit: number, beforeId?: number }): Promise<SecurityEventRecord[]>
}

/**
 * Security events: a record per login, failure, lockout, password or email
 * change, revoked session, detected refresh-token reuse, re-authentication,
 * second factor turned on or off, wrong second-factor code, second factor locked (MFA_MAX_WRONG_CODES), recovery code used or renewed,
 * passkey added, removed or used to log in, and passkey counter regression (a cloned authenticator),
 * kept SECURITY_EVENT_RETENTION (pruned with the refresh tokens). The user sees
 * its own at GET /auth/security-events; an operator with `account-service events`.
 */
export default fp(async (fastify) => {
  const { store, log } = fastify
  const securityEvents: SecurityEvents = {
    async record (type, client, { userId, sessionId = null, detail }) {
      log.info({ event: type, userId, sessionId, ip: client.ip, reqId: client.requestId }, `security event: ${type}`)
      try {
        await store.recordSecurityEvent({
          type,
          userId,
          sessionId,
          ip: client.ip,
          userAgent: client.userAgent,
          requestId: client.requestId,
          detail: detail ?? null,
          createdAt: new Date()
        })
      } catch (error) {
        log.error({ err: error, event: type, userId }, 'security event not stored')
      }
    },
    list: (userId, page) => store.listSecurityEvents(userId, page)
  }
  fastify.decorate('securityEvents', securityEvents)
}, { name: 'security-events', dependencies: ['store'] })

import type { OutgoingWebhook } from './webhooks.js'

/** One security event of an account (login, failure, lockout, change); see src/security-events.ts for the types. */
export interface SecurityEventRecord {
  id: number
  type: string
  /** Null for a failed login of an email that has no account. */
  userId: number | null
  sessionId: string | null
  ip: string | null
  userAgent: string | null
  requestId: string | null
  /** What else the event tells (a login's method, the previous email address). */
  detail: Record<string, unknown> | null
  createdAt: Date
  /** The admin who acted (admin API, CLI); null for the user's own events and once that admin is deleted. */
  actorId: number | null
}

export type NewSecurityEvent = Omit<SecurityEventRecord, 'id' | 'actorId'> & { actorId?: number | null }

/**
 * A security event and the webhook it sends, written by a store method in the transaction of the change
 * it reports (an admin's audit row: setUserRole, deleteTotp, createUser): the change and its row, or neither.
 */
export interface SecurityEventWrite {
  event: NewSecurityEvent
  webhook?: OutgoingWebhook
}

/** A page of the audit trail across users, newest first. */
export interface SecurityEventSearch {
  userId?: number
  type?: string
  /** Only events older than this event id (the cursor: the last id of the previous page). */
  beforeId?: number
  limit: number
}

/**
 * The audit trail, kept longer than the other events (AUDIT_RETENTION): every event an admin acted in
 * (actor_id set) or of an admin action's type (the CLI acts with no actor; an admin's deletion sets it null).
 */
export interface AuditRetention {
  /** Audit events created before this are deleted. */
  olderThan: Date
  types: readonly string[]
}

/** The security events a user sees in their account, pruned after their retention. */
export interface SecurityEventsStore {
  /** Stores the event and, in the same transaction, the webhook it sends (core/webhooks/types.ts): both or neither. */
  recordSecurityEvent (event: NewSecurityEvent, webhook?: OutgoingWebhook): Promise<void>
  /** The user's events, newest first, `limit` at a time, older than the event `beforeId` when given. */
  listSecurityEvents (userId: number, page: { limit: number, beforeId?: number }): Promise<SecurityEventRecord[]>
  /** Every user's events (and the admin actions), newest first, filtered by user and type. */
  searchSecurityEvents (search: SecurityEventSearch): Promise<SecurityEventRecord[]>
  /**
   * Deletes up to `limit` events created before `olderThan`, but the audit trail's (`audit`) before its own
   * `olderThan` only; returns how many (pruning calls again while it returns `limit`).
   */
  pruneSecurityEvents (olderThan: Date, limit: number, audit?: AuditRetention): Promise<number>
}

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
}

export type NewSecurityEvent = Omit<SecurityEventRecord, 'id'>

/** The security events a user sees in their account, pruned after their retention. */
export interface SecurityEventsStore {
  recordSecurityEvent (event: NewSecurityEvent): Promise<void>
  /** The user's events, newest first, `limit` at a time, older than the event `beforeId` when given. */
  listSecurityEvents (userId: number, page: { limit: number, beforeId?: number }): Promise<SecurityEventRecord[]>
  /** Deletes up to `limit` events created before `olderThan`; returns how many (pruning calls again while it returns `limit`). */
  pruneSecurityEvents (olderThan: Date, limit: number): Promise<number>
}

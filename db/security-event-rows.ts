import { and, type Column, inArray, isNotNull, lt, not, or, type SQL } from 'drizzle-orm'
import type { AuditRetention, SecurityEventRecord } from './store.js'

/*
 * A security event's `detail` is stored as JSON text in both backends; these
 * two functions are the only place that knows it.
 */

export function encodeDetail (detail: SecurityEventRecord['detail']): string | null {
  return detail === null ? null : JSON.stringify(detail)
}

export function decodeSecurityEvent<Row extends Omit<SecurityEventRecord, 'detail'> & { detail: string | null }> (row: Row): SecurityEventRecord {
  return { ...row, detail: row.detail === null ? null : JSON.parse(row.detail) as Record<string, unknown> }
}

/** The columns the pruning condition reads, as either backend's schema has them. */
interface EventColumns { createdAt: Column, actorId: Column, type: Column }

/**
 * Which events pruning deletes: those created before `olderThan`, but an audit event (an admin's action,
 * AuditRetention) only once it is also older than the audit's own limit.
 */
export function prunableEvents (table: EventColumns, olderThan: Date, audit: AuditRetention | undefined): SQL | undefined {
  if (audit === undefined) return lt(table.createdAt, olderThan)
  const auditEvent = or(isNotNull(table.actorId), inArray(table.type, [...audit.types]))
  return and(lt(table.createdAt, olderThan), or(not(auditEvent as SQL), lt(table.createdAt, audit.olderThan)))
}

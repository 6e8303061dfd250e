import type { SecurityEventRecord } from './store.js'

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

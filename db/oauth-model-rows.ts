import type { OAuthModelRecord } from './store.js'

/*
 * An OAuth model's payload is stored as JSON text in both backends, with the values its lookups need
 * copied into columns beside it; these functions are the only place that knows it.
 */

/** The columns an upsert writes (both on insert and on replace; consumed_at is not among them). */
export function oauthModelColumns (payload: Record<string, unknown>, expiresAt: Date | null) {
  const lookup = (name: string) => typeof payload[name] === 'string' ? payload[name] : null
  return {
    payload: JSON.stringify(payload),
    grantId: lookup('grantId'),
    userCode: lookup('userCode'),
    uid: lookup('uid'),
    accountId: lookup('accountId'),
    expiresAt
  }
}

export function decodeOAuthModel (row: { id: string, payload: string, expiresAt: Date | null, consumedAt: Date | null }): OAuthModelRecord {
  return { id: row.id, payload: JSON.parse(row.payload) as Record<string, unknown>, expiresAt: row.expiresAt, consumedAt: row.consumedAt }
}

import type { RevocationRecord } from '../../db/store.js'

/** What the guard needs to know of a revoked session. */
export interface RevokedSession {
  userDeleted: boolean
  /** Milliseconds since the epoch. */
  revokedAt: number
  statusIndex: number | null
}

/**
 * A seq missing below the newest one read may belong to a transaction that has not committed yet
 * (PostgreSQL hands out identities before commit, so commit order is not seq order). The cursor
 * waits below such a gap this long (longer than the store's statement timeout) before skipping
 * it as a rolled-back one; re-reading the rows above it meanwhile is harmless.
 */
export const GAP_WAIT_MS = 10_000

/**
 * The sessions revoked within the last ACCESS_TOKEN_TTL (older ones are moot: their access tokens
 * have expired), filled from the revocation log. Insertion order is about revocation order, so
 * expiry drops entries from the front.
 */
export class RevocationSet {
  private readonly revoked = new Map<string, RevokedSession>()
  /** Every log row up to this seq has been applied. */
  cursor = 0
  private gapSince: number | undefined
  /** Grows whenever a session is added or forgotten: the status list re-signs only after a change. */
  version = 0

  private readonly retentionMs: number

  constructor (retentionMs: number) {
    this.retentionMs = retentionMs
  }

  get size (): number {
    return this.revoked.size
  }

  get (sessionId: string): RevokedSession | undefined {
    return this.revoked.get(sessionId)
  }

  values (): IterableIterator<RevokedSession> {
    return this.revoked.values()
  }

  /**
   * Applies log rows read after the cursor (in seq order) and moves the cursor as far as no gap is
   * pending. A user-change row (no session) moves the cursor only: its reader is the user cache.
   */
  apply (rows: RevocationRecord[], now: number, { trustGaps = false } = {}): void {
    let contiguous = this.cursor
    for (const row of rows) {
      if (row.sessionId !== null) this.add(row.sessionId, { userDeleted: row.userDeleted, revokedAt: row.revokedAt.getTime(), statusIndex: row.statusIndex })
      if (row.seq === contiguous + 1) contiguous = row.seq
    }
    const newest = rows.length === 0 ? this.cursor : rows[rows.length - 1].seq
    if (contiguous === newest || trustGaps) {
      this.cursor = newest
      this.gapSince = undefined
    } else if (contiguous > this.cursor || this.gapSince === undefined) {
      this.cursor = contiguous
      this.gapSince = now
    } else if (now - this.gapSince >= GAP_WAIT_MS) {
      this.cursor = newest
      this.gapSince = undefined
    }
  }

  /** Forgets sessions revoked longer ago than the retention. */
  expire (now: number): void {
    const cutoff = now - this.retentionMs
    for (const [sessionId, session] of this.revoked) {
      if (session.revokedAt >= cutoff) break
      this.revoked.delete(sessionId)
      this.version += 1
    }
  }

  private add (sessionId: string, session: RevokedSession): void {
    const known = this.revoked.get(sessionId)
    // A deleted user's mark wins over an earlier logout of the same session.
    if (known !== undefined && (known.userDeleted || !session.userDeleted)) return
    this.revoked.set(sessionId, session)
    this.version += 1
  }
}

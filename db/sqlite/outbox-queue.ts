import { and, asc, count, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import type { Db } from './queries.js'
import type { mailOutbox, webhookOutbox } from './schema.js'

/*
 * The queries every outbox runs (mail_outbox, webhook_outbox: one shape, db/sqlite/schema.ts outboxColumns),
 * written once for the table they are given. SQLite has one writer at a time, so one UPDATE that picks and
 * leases rows is atomic against any other process on the file (the CLI, a second server): a row is claimed
 * by one of them only.
 */

type OutboxTable = typeof mailOutbox | typeof webhookOutbox

/** What differs between two outboxes: what a claim reads, and what a finished row keeps. */
export interface OutboxKind<Claimed> {
  /** The columns a claim returns (with `id` and `attempts`). */
  claimed: Record<keyof Claimed, SQLiteColumn>
  /** The status of a row that reached its receiver ('sent', 'delivered'). */
  done: string
  /** The columns erased when the row is done, and when it is given up (a body holding a link's token). */
  erasedWhenDone: Record<string, string>
  erasedWhenFailed: Record<string, string>
}

/** The lifecycle of one outbox's rows: claim, done, retry, give up, count, prune (db/store/outbox.ts, db/store/webhooks.ts). */
export function outboxQueue<Claimed extends { id: number }> (table: OutboxTable, kind: OutboxKind<Claimed>) {
  // The two tables share these columns (outboxColumns); drizzle's builders take one table, not a union of them.
  const outbox = table as typeof mailOutbox
  const finish = (db: Db, id: number, changes: Record<string, unknown>) => {
    db.update(outbox).set({ claimedUntil: null, ...changes }).where(eq(outbox.id, id)).run()
  }
  return {
    claim (db: Db, now: Date, claimedUntil: Date, limit: number): Claimed[] {
      const due = db.select({ id: outbox.id }).from(outbox)
        .where(and(
          eq(outbox.status, 'pending'),
          lte(outbox.nextAttemptAt, now),
          or(isNull(outbox.claimedUntil), lte(outbox.claimedUntil, now))
        ))
        .orderBy(asc(outbox.id))
        .limit(limit)
      const claimed = db.update(outbox)
        .set({ claimedUntil, attempts: sql`${outbox.attempts} + 1` })
        .where(inArray(outbox.id, due))
        .returning(kind.claimed)
        .all() as Claimed[]
      // RETURNING's order is not the claim's: oldest first, as promised.
      return claimed.sort((a, b) => a.id - b.id)
    },

    markDone (db: Db, id: number, now: Date): void {
      finish(db, id, { status: kind.done, finishedAt: now, lastError: null, ...kind.erasedWhenDone })
    },

    retry (db: Db, id: number, retryAt: Date, error: string): void {
      finish(db, id, { nextAttemptAt: retryAt, lastError: error })
    },

    markFailed (db: Db, id: number, now: Date, error: string): void {
      finish(db, id, { status: 'failed', finishedAt: now, lastError: error, ...kind.erasedWhenFailed })
    },

    countPending (db: Db): number {
      return db.select({ pending: count() }).from(outbox).where(eq(outbox.status, 'pending')).get()?.pending ?? 0
    },

    prune (db: Db, finishedBefore: Date, limit: number): number {
      const prunable = db.select({ id: outbox.id }).from(outbox).where(lte(outbox.finishedAt, finishedBefore)).limit(limit)
      return db.delete(outbox).where(inArray(outbox.id, prunable)).run().changes
    }
  }
}

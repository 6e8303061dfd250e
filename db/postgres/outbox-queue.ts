import { and, asc, count, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'
import type { Db } from './queries.js'
import type { mailOutbox, webhookOutbox } from './schema.js'

/*
 * The queries every outbox runs (mail_outbox, webhook_outbox: one shape, db/postgres/schema.ts outboxColumns),
 * written once for the table they are given. A claim is one UPDATE whose rows come from a SELECT … FOR UPDATE
 * SKIP LOCKED: instances claiming at once take different rows, and a row another instance claimed in the
 * meantime is re-checked against its new lease and dropped (READ COMMITTED re-evaluates a locked row's
 * condition), so each row has one sender at a time.
 */

type OutboxTable = typeof mailOutbox | typeof webhookOutbox

/** What differs between two outboxes: what a claim reads, and what a finished row keeps. */
export interface OutboxKind<Claimed> {
  /** The columns a claim returns (with `id` and `attempts`). */
  claimed: Record<keyof Claimed, PgColumn>
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
  const finish = async (db: Db, id: number, changes: Record<string, unknown>) => {
    await db.update(outbox).set({ claimedUntil: null, ...changes }).where(eq(outbox.id, id))
  }
  return {
    async claim (db: Db, now: Date, claimedUntil: Date, limit: number): Promise<Claimed[]> {
      const due = db.select({ id: outbox.id }).from(outbox)
        .where(and(
          eq(outbox.status, 'pending'),
          lte(outbox.nextAttemptAt, now),
          or(isNull(outbox.claimedUntil), lte(outbox.claimedUntil, now))
        ))
        .orderBy(asc(outbox.id))
        .limit(limit)
        .for('update', { skipLocked: true })
      const claimed = await db.update(outbox)
        .set({ claimedUntil, attempts: sql`${outbox.attempts} + 1` })
        .where(inArray(outbox.id, due))
        .returning(kind.claimed) as Claimed[]
      // RETURNING's order is not the claim's: oldest first, as promised.
      return claimed.sort((a, b) => a.id - b.id)
    },

    async markDone (db: Db, id: number, now: Date): Promise<void> {
      await finish(db, id, { status: kind.done, finishedAt: now, lastError: null, ...kind.erasedWhenDone })
    },

    async retry (db: Db, id: number, retryAt: Date, error: string): Promise<void> {
      await finish(db, id, { nextAttemptAt: retryAt, lastError: error })
    },

    async markFailed (db: Db, id: number, now: Date, error: string): Promise<void> {
      await finish(db, id, { status: 'failed', finishedAt: now, lastError: error, ...kind.erasedWhenFailed })
    },

    async countPending (db: Db): Promise<number> {
      const [{ pending }] = await db.select({ pending: count() }).from(outbox).where(eq(outbox.status, 'pending'))
      return pending
    },

    async prune (db: Db, finishedBefore: Date, limit: number): Promise<number> {
      // SKIP LOCKED: instances pruning at the same moment take different rows instead of waiting on each other.
      const prunable = db.select({ id: outbox.id }).from(outbox)
        .where(lte(outbox.finishedAt, finishedBefore)).limit(limit).for('update', { skipLocked: true })
      return (await db.delete(outbox).where(inArray(outbox.id, prunable))).rowCount ?? 0
    }
  }
}

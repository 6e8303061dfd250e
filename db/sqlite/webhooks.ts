import { and, asc, count, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import type { OutgoingWebhook, WebhookMessage, WebhookOutboxStore } from '../store.js'
import type { SqliteConnection } from './connection.js'
import type { Tx } from './queries.js'
import { webhookOutbox } from './schema.js'

/*
 * The webhook outbox of the SQLite store (db/store/webhooks.ts). SQLite has one writer at a time, so
 * one UPDATE that picks and leases rows is atomic against any other process on the file: an event
 * is claimed by one of them only (as the mail outbox, db/sqlite/mail-outbox.ts).
 */
/** The outbox row of an event written with its change, in the change's transaction (db/store/webhooks.ts, OutgoingWebhook). */
export function insertWebhook (tx: Tx, webhook: OutgoingWebhook | undefined): void {
  if (webhook === undefined) return
  const { messageId, type, payload, createdAt } = webhook
  tx.insert(webhookOutbox).values({ messageId, type, payload, nextAttemptAt: createdAt, createdAt }).run()
}

export function webhooksQueries (c: SqliteConnection): WebhookOutboxStore {
  return {
    async enqueueWebhooks (messages: WebhookMessage[], now: Date) {
      if (messages.length === 0) return
      c.run(() => c.db.insert(webhookOutbox).values(messages.map(message => ({ ...message, nextAttemptAt: now, createdAt: now }))).run())
    },

    async claimWebhooks (now: Date, claimedUntil: Date, limit: number) {
      return c.run(() => {
        const due = c.db.select({ id: webhookOutbox.id }).from(webhookOutbox)
          .where(and(
            eq(webhookOutbox.status, 'pending'),
            lte(webhookOutbox.nextAttemptAt, now),
            or(isNull(webhookOutbox.claimedUntil), lte(webhookOutbox.claimedUntil, now))
          ))
          .orderBy(asc(webhookOutbox.id))
          .limit(limit)
        return c.db.update(webhookOutbox)
          .set({ claimedUntil, attempts: sql`${webhookOutbox.attempts} + 1` })
          .where(inArray(webhookOutbox.id, due))
          .returning({ id: webhookOutbox.id, messageId: webhookOutbox.messageId, type: webhookOutbox.type, payload: webhookOutbox.payload, attempts: webhookOutbox.attempts })
          .all()
          // RETURNING's order is not the claim's: oldest first, as promised.
          .sort((a, b) => a.id - b.id)
      })
    },

    async markWebhookDelivered (id: number, now: Date) {
      c.run(() => c.db.update(webhookOutbox).set({ status: 'delivered', finishedAt: now, payload: '', claimedUntil: null, lastError: null }).where(eq(webhookOutbox.id, id)).run())
    },

    async retryWebhook (id: number, retryAt: Date, error: string) {
      c.run(() => c.db.update(webhookOutbox).set({ nextAttemptAt: retryAt, claimedUntil: null, lastError: error }).where(eq(webhookOutbox.id, id)).run())
    },

    async markWebhookFailed (id: number, now: Date, error: string) {
      c.run(() => c.db.update(webhookOutbox).set({ status: 'failed', finishedAt: now, claimedUntil: null, lastError: error }).where(eq(webhookOutbox.id, id)).run())
    },

    async countPendingWebhooks () {
      return c.run(() => c.db.select({ pending: count() }).from(webhookOutbox).where(eq(webhookOutbox.status, 'pending')).get()?.pending ?? 0)
    },

    async pruneWebhooks (finishedBefore: Date, limit: number) {
      return c.run(() => {
        const prunable = c.db.select({ id: webhookOutbox.id }).from(webhookOutbox).where(lte(webhookOutbox.finishedAt, finishedBefore)).limit(limit)
        return c.db.delete(webhookOutbox).where(inArray(webhookOutbox.id, prunable)).run().changes
      })
    }
  }
}

import { and, asc, count, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import type { OutgoingWebhook, WebhookMessage, WebhookOutboxStore } from '../store.js'
import type { PostgresConnection } from './connection.js'
import type { Transaction } from './queries.js'
import { webhookOutbox } from './schema.js'

/*
 * The webhook outbox of the PostgreSQL store (db/store/webhooks.ts). A claim is one UPDATE whose rows
 * come from a SELECT … FOR UPDATE SKIP LOCKED: instances claiming at once take different rows, and a
 * row another instance claimed in the meantime is re-checked against its new lease and dropped (READ
 * COMMITTED re-evaluates a locked row's condition), so each event has one sender at a time (as the
 * mail outbox, db/postgres/mail-outbox.ts).
 */
/** The outbox row of an event written with its change, in the change's transaction (db/store/webhooks.ts, OutgoingWebhook). */
export async function insertWebhook (tx: Transaction, webhook: OutgoingWebhook | undefined): Promise<void> {
  if (webhook === undefined) return
  const { messageId, type, payload, createdAt } = webhook
  await tx.insert(webhookOutbox).values({ messageId, type, payload, nextAttemptAt: createdAt, createdAt })
}

export function webhooksQueries (c: PostgresConnection): WebhookOutboxStore {
  return {
    async enqueueWebhooks (messages: WebhookMessage[], now: Date) {
      if (messages.length === 0) return
      await c.run(() => c.db.insert(webhookOutbox).values(messages.map(message => ({ ...message, nextAttemptAt: now, createdAt: now }))))
    },

    async claimWebhooks (now: Date, claimedUntil: Date, limit: number) {
      const claimed = await c.run(() => {
        const due = c.db.select({ id: webhookOutbox.id }).from(webhookOutbox)
          .where(and(
            eq(webhookOutbox.status, 'pending'),
            lte(webhookOutbox.nextAttemptAt, now),
            or(isNull(webhookOutbox.claimedUntil), lte(webhookOutbox.claimedUntil, now))
          ))
          .orderBy(asc(webhookOutbox.id))
          .limit(limit)
          .for('update', { skipLocked: true })
        return c.db.update(webhookOutbox)
          .set({ claimedUntil, attempts: sql`${webhookOutbox.attempts} + 1` })
          .where(inArray(webhookOutbox.id, due))
          .returning({ id: webhookOutbox.id, messageId: webhookOutbox.messageId, type: webhookOutbox.type, payload: webhookOutbox.payload, attempts: webhookOutbox.attempts })
      })
      // RETURNING's order is not the claim's: oldest first, as promised.
      return claimed.sort((a, b) => a.id - b.id)
    },

    async markWebhookDelivered (id: number, now: Date) {
      await c.run(() => c.db.update(webhookOutbox).set({ status: 'delivered', finishedAt: now, payload: '', claimedUntil: null, lastError: null }).where(eq(webhookOutbox.id, id)))
    },

    async retryWebhook (id: number, retryAt: Date, error: string) {
      await c.run(() => c.db.update(webhookOutbox).set({ nextAttemptAt: retryAt, claimedUntil: null, lastError: error }).where(eq(webhookOutbox.id, id)))
    },

    async markWebhookFailed (id: number, now: Date, error: string) {
      await c.run(() => c.db.update(webhookOutbox).set({ status: 'failed', finishedAt: now, claimedUntil: null, lastError: error }).where(eq(webhookOutbox.id, id)))
    },

    async countPendingWebhooks () {
      const [{ pending }] = await c.run(() => c.db.select({ pending: count() }).from(webhookOutbox).where(eq(webhookOutbox.status, 'pending')))
      return pending
    },

    async pruneWebhooks (finishedBefore: Date, limit: number) {
      // SKIP LOCKED: instances pruning at the same moment take different rows instead of waiting on each other.
      return await c.run(async () => {
        const prunable = c.db.select({ id: webhookOutbox.id }).from(webhookOutbox)
          .where(lte(webhookOutbox.finishedAt, finishedBefore)).limit(limit).for('update', { skipLocked: true })
        return (await c.db.delete(webhookOutbox).where(inArray(webhookOutbox.id, prunable))).rowCount ?? 0
      })
    }
  }
}

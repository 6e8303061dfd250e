import type { ClaimedWebhook, OutgoingWebhook, WebhookMessage, WebhookOutboxStore } from '../store.js'
import type { PostgresConnection } from './connection.js'
import { outboxQueue } from './outbox-queue.js'
import type { Transaction } from './queries.js'
import { webhookOutbox } from './schema.js'

/** The webhook outbox's claims and outcomes: a given-up event keeps its body until pruned, for an operator to look at. */
const webhookQueue = outboxQueue<ClaimedWebhook>(webhookOutbox, {
  claimed: { id: webhookOutbox.id, messageId: webhookOutbox.messageId, type: webhookOutbox.type, payload: webhookOutbox.payload, attempts: webhookOutbox.attempts },
  done: 'delivered',
  erasedWhenDone: { payload: '' },
  erasedWhenFailed: {}
})

/** The outbox row of an event written with its change, in the change's transaction (db/store/webhooks.ts, OutgoingWebhook). */
export async function insertWebhook (tx: Transaction, webhook: OutgoingWebhook | undefined): Promise<void> {
  if (webhook === undefined) return
  const { messageId, type, payload, createdAt } = webhook
  await tx.insert(webhookOutbox).values({ messageId, type, payload, nextAttemptAt: createdAt, createdAt })
}

/** The webhook outbox of the PostgreSQL store (db/store/webhooks.ts). */
export function webhooksQueries (c: PostgresConnection): WebhookOutboxStore {
  return {
    async enqueueWebhooks (messages: WebhookMessage[], now: Date) {
      if (messages.length === 0) return
      await c.run(() => c.db.insert(webhookOutbox).values(messages.map(message => ({ ...message, nextAttemptAt: now, createdAt: now }))))
    },
    claimWebhooks: async (now, claimedUntil, limit) => await c.run(() => webhookQueue.claim(c.db, now, claimedUntil, limit)),
    markWebhookDelivered: async (id, now) => { await c.run(() => webhookQueue.markDone(c.db, id, now)) },
    retryWebhook: async (id, retryAt, error) => { await c.run(() => webhookQueue.retry(c.db, id, retryAt, error)) },
    markWebhookFailed: async (id, now, error) => { await c.run(() => webhookQueue.markFailed(c.db, id, now, error)) },
    countPendingWebhooks: async () => await c.run(() => webhookQueue.countPending(c.db)),
    pruneWebhooks: async (finishedBefore, limit) => await c.run(() => webhookQueue.prune(c.db, finishedBefore, limit))
  }
}

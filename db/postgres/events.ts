import type { SecurityEventsStore } from '../store.js'
import { and, desc, eq, inArray, lt } from 'drizzle-orm'
import type { AuditRetention, NewSecurityEvent, OutgoingWebhook, SecurityEventSearch, SecurityEventWrite } from '../store.js'
import { prunableEvents } from '../security-event-rows.js'
import { decodeSecurityEvent, encodeDetail } from '../security-event-rows.js'
import { securityEvents } from './schema.js'
import type { PostgresConnection } from './connection.js'
import type { Transaction } from './queries.js'
import { insertWebhook } from './webhooks.js'

const eventRow = (event: NewSecurityEvent) => ({ ...event, detail: encodeDetail(event.detail) })

/** A change's audit row and the webhook it sends, in the change's transaction (db/store/events.ts, SecurityEventWrite). */
export async function insertSecurityEvent (tx: Transaction, audit: SecurityEventWrite | undefined): Promise<void> {
  if (audit === undefined) return
  await tx.insert(securityEvents).values(eventRow(audit.event))
  await insertWebhook(tx, audit.webhook)
}

/** The events of the PostgreSQL store (db/store/events.ts). */
export function eventsQueries (c: PostgresConnection): SecurityEventsStore {
  return {
    async recordSecurityEvent (event: NewSecurityEvent, webhook?: OutgoingWebhook) {
      if (webhook === undefined) {
        await c.run(() => c.db.insert(securityEvents).values(eventRow(event)))
        return
      }
      // The event and the webhook it sends: both or neither.
      await c.run(() => c.transaction(async (tx) => { await insertSecurityEvent(tx, { event, webhook }) }))
    },

    async listSecurityEvents (userId: number, page: { limit: number, beforeId?: number }) {
      const rows = await c.run(() => c.db.select().from(securityEvents)
        .where(and(eq(securityEvents.userId, userId), page.beforeId === undefined ? undefined : lt(securityEvents.id, page.beforeId)))
        .orderBy(desc(securityEvents.id))
        .limit(page.limit))
      return rows.map(decodeSecurityEvent)
    },

    async searchSecurityEvents ({ userId, type, beforeId, limit }: SecurityEventSearch) {
      const rows = await c.run(() => c.db.select().from(securityEvents)
        .where(and(
          userId === undefined ? undefined : eq(securityEvents.userId, userId),
          type === undefined ? undefined : eq(securityEvents.type, type),
          beforeId === undefined ? undefined : lt(securityEvents.id, beforeId)
        ))
        .orderBy(desc(securityEvents.id))
        .limit(limit))
      return rows.map(decodeSecurityEvent)
    },

    async pruneSecurityEvents (olderThan: Date, limit: number, audit?: AuditRetention) {
      const prunable = c.db.select({ id: securityEvents.id }).from(securityEvents)
        .where(prunableEvents(securityEvents, olderThan, audit)).limit(limit).for('update', { skipLocked: true })
      return c.run(() => c.transaction(async (tx) => (await tx.delete(securityEvents).where(inArray(securityEvents.id, prunable))).rowCount ?? 0))
    }
  }
}

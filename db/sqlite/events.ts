import type { SecurityEventsStore } from '../store.js'
import { and, desc, eq, inArray, lt } from 'drizzle-orm'
import type { AuditRetention, NewSecurityEvent, OutgoingWebhook, SecurityEventSearch, SecurityEventWrite } from '../store.js'
import { prunableEvents } from '../security-event-rows.js'
import { decodeSecurityEvent, encodeDetail } from '../security-event-rows.js'
import { securityEvents } from './schema.js'
import type { SqliteConnection } from './connection.js'
import type { Tx } from './queries.js'
import { insertWebhook } from './webhooks.js'

const eventRow = (event: NewSecurityEvent) => ({ ...event, detail: encodeDetail(event.detail), actorId: event.actorId ?? null })

/** A change's audit row and the webhook it sends, in the change's transaction (db/store/events.ts, SecurityEventWrite). */
export function insertSecurityEvent (tx: Tx, audit: SecurityEventWrite | undefined): void {
  if (audit === undefined) return
  tx.insert(securityEvents).values(eventRow(audit.event)).run()
  insertWebhook(tx, audit.webhook)
}

/** The events of the SQLite store (db/store/events.ts). */
export function eventsQueries (c: SqliteConnection): SecurityEventsStore {
  return {
    async recordSecurityEvent (event: NewSecurityEvent, webhook?: OutgoingWebhook) {
      if (webhook === undefined) {
        c.run(() => c.statements.insertSecurityEvent.run(eventRow(event)))
        return
      }
      // The event and the webhook it sends: both or neither.
      c.run(() => c.db.transaction((tx) => { insertSecurityEvent(tx, { event, webhook }) }, { behavior: 'immediate' }))
    },

    async listSecurityEvents (userId: number, page: { limit: number, beforeId?: number }) {
      return c.run(() => c.db.select().from(securityEvents)
        .where(and(eq(securityEvents.userId, userId), page.beforeId === undefined ? undefined : lt(securityEvents.id, page.beforeId)))
        .orderBy(desc(securityEvents.id))
        .limit(page.limit)
        .all()
        .map(decodeSecurityEvent))
    },

    async searchSecurityEvents ({ userId, type, beforeId, limit }: SecurityEventSearch) {
      return c.run(() => c.db.select().from(securityEvents)
        .where(and(
          userId === undefined ? undefined : eq(securityEvents.userId, userId),
          type === undefined ? undefined : eq(securityEvents.type, type),
          beforeId === undefined ? undefined : lt(securityEvents.id, beforeId)
        ))
        .orderBy(desc(securityEvents.id))
        .limit(limit)
        .all()
        .map(decodeSecurityEvent))
    },

    async pruneSecurityEvents (olderThan: Date, limit: number, audit?: AuditRetention) {
      const prunable = c.db.select({ id: securityEvents.id }).from(securityEvents).where(prunableEvents(securityEvents, olderThan, audit)).limit(limit)
      return c.run(() => c.db.delete(securityEvents).where(inArray(securityEvents.id, prunable)).run().changes)
    }
  }
}

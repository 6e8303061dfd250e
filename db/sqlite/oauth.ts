import type { OAuthStore } from '../store.js'
import { and, eq, gt, isNull, lte, or, sql } from 'drizzle-orm'
import { decodeOAuthModel, oauthModelColumns } from '../oauth-model-rows.js'
import { oauthModels } from './schema.js'
import type { SqliteConnection } from './connection.js'
import type { OAuthModelRow, StoredOAuthModel } from './queries.js'

const recordColumns = { id: oauthModels.id, payload: oauthModels.payload, expiresAt: oauthModels.expiresAt, consumedAt: oauthModels.consumedAt }

/** A model's row for the prepared writes (db/sqlite/queries.ts): its columns, times in milliseconds. */
function rowOf (kind: string, id: string, payload: Record<string, unknown>, expiresAt: Date | null): OAuthModelRow {
  const { expiresAt: expires, ...columns } = oauthModelColumns(payload, expiresAt)
  return { kind, id, ...columns, expiresAt: expires === null ? null : expires.getTime() }
}

/** A model read by a prepared statement, as the store gives it. */
function recordOf (row: StoredOAuthModel | undefined) {
  return row === undefined
    ? undefined
    : decodeOAuthModel({ ...row, expiresAt: row.expiresAt === null ? null : new Date(row.expiresAt), consumedAt: row.consumedAt === null ? null : new Date(row.consumedAt) })
}

/** Not expired at `now`: a null expiry never expires. */
const unexpired = (now: Date) => or(isNull(oauthModels.expiresAt), gt(oauthModels.expiresAt, now))

/** The OAuth provider's models in the SQLite store (db/store/oauth.ts). Listings are in insertion order: the rowid (db/sqlite/schema.ts). */
export function oauthQueries (c: SqliteConnection): OAuthStore {
  return {
    async upsertOAuthModel (kind: string, id: string, payload: Record<string, unknown>, expiresAt: Date | null) {
      const row = rowOf(kind, id, payload, expiresAt)
      c.run(() => c.statements.upsertOAuthModel.run(row))
    },

    async claimOAuthModel (kind: string, id: string, payload: Record<string, unknown>, expiresAt: Date, now: Date) {
      const row = rowOf(kind, id, payload, expiresAt)
      return c.run(() => c.statements.claimOAuthModel.run({ ...row, now: now.getTime() }).changes > 0)
    },

    async claimOAuthModels (kind, claims, now) {
      const at = now.getTime()
      // A synchronous transaction: nothing else runs between the claims, and one commit writes them all.
      return c.run(() => c.db.transaction(() => claims.map(({ id, payload, expiresAt }) =>
        c.statements.claimOAuthModel.run({ ...rowOf(kind, id, payload, expiresAt), now: at }).changes > 0), { behavior: 'immediate' }))
    },

    async findOAuthModel (kind: string, id: string, now: Date) {
      return c.run(() => recordOf(c.statements.oauthModelById.get({ kind, id, now: now.getTime() })))
    },

    async findOAuthModelByUserCode (kind: string, userCode: string, now: Date) {
      return c.run(() => recordOf(c.statements.oauthModelByUserCode.get({ kind, userCode, now: now.getTime() })))
    },

    async findOAuthModelByUid (kind: string, uid: string, now: Date) {
      return c.run(() => recordOf(c.statements.oauthModelByUid.get({ kind, uid, now: now.getTime() })))
    },

    async consumeOAuthModel (kind: string, id: string, now: Date) {
      return c.run(() => c.statements.consumeOAuthModel.run({ kind, id, now: now.getTime() }).changes > 0)
    },

    async destroyOAuthModel (kind: string, id: string) {
      c.run(() => c.statements.destroyOAuthModel.run({ kind, id }))
    },

    async destroyOAuthModelsOfGrant (grantId: string) {
      c.run(() => c.db.delete(oauthModels).where(eq(oauthModels.grantId, grantId)).run())
    },

    async listOAuthModels (kind: string, now: Date, options: { accountId?: string } = {}) {
      return c.run(() => c.db.select(recordColumns).from(oauthModels)
        .where(and(eq(oauthModels.kind, kind), options.accountId === undefined ? undefined : eq(oauthModels.accountId, options.accountId), unexpired(now)))
        .orderBy(sql`${oauthModels}.rowid`).all().map(decodeOAuthModel))
    },

    async pruneOAuthModels (now: Date, limit: number) {
      return c.run(() => c.db.delete(oauthModels)
        .where(sql`rowid in (select rowid from ${oauthModels} where ${lte(oauthModels.expiresAt, now)} limit ${limit})`).run().changes)
    }
  }
}

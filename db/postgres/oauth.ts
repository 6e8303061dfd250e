import type { OAuthModelClaim, OAuthStore } from '../store.js'
import { and, asc, eq, gt, isNull, lte, or, sql, type SQL } from 'drizzle-orm'
import { decodeOAuthModel, oauthModelColumns } from '../oauth-model-rows.js'
import { oauthModels } from './schema.js'
import type { PostgresConnection } from './connection.js'

const recordColumns = { id: oauthModels.id, payload: oauthModels.payload, expiresAt: oauthModels.expiresAt, consumedAt: oauthModels.consumedAt }

/** Not expired at `now`: a null expiry never expires. */
const unexpired = (now: Date) => or(isNull(oauthModels.expiresAt), gt(oauthModels.expiresAt, now))

/**
 * Whether a value sent by a client (a client_id, a code, a uid) holds a NUL: PostgreSQL's text cannot, so the
 * query would fail (500); no model the provider stores has one, so it is simply not found (invalid_client, invalid_grant).
 */
const holdsNul = (value: string) => value.includes('\u0000')

/** Inserts the model unless an unexpired one of that kind and id is (db/store/oauth.ts claimOAuthModel); its id when it wrote. */
function claimIn (db: Pick<PostgresConnection['db'], 'insert'>, kind: string, { id, payload, expiresAt }: OAuthModelClaim, now: Date) {
  const columns = oauthModelColumns(payload, expiresAt)
  return db.insert(oauthModels).values({ kind, id, ...columns })
    .onConflictDoUpdate({ target: [oauthModels.kind, oauthModels.id], set: { ...columns, consumedAt: null }, setWhere: lte(oauthModels.expiresAt, now) })
    .returning({ id: oauthModels.id })
}

/** The OAuth provider's models in the PostgreSQL store (db/store/oauth.ts). Listings are in insertion order: the seq column (db/postgres/schema.ts). */
export function oauthQueries (c: PostgresConnection): OAuthStore {
  const findOne = async (kind: string, value: string, match: SQL, now: Date) => {
    if (holdsNul(value)) return undefined
    return await c.run(async () => {
      const [row] = await c.db.select(recordColumns).from(oauthModels).where(and(eq(oauthModels.kind, kind), match, unexpired(now))).limit(1)
      return row === undefined ? undefined : decodeOAuthModel(row)
    })
  }

  return {
    async upsertOAuthModel (kind: string, id: string, payload: Record<string, unknown>, expiresAt: Date | null) {
      const columns = oauthModelColumns(payload, expiresAt)
      await c.run(() => c.db.insert(oauthModels).values({ kind, id, ...columns })
        .onConflictDoUpdate({ target: [oauthModels.kind, oauthModels.id], set: columns }))
    },

    async claimOAuthModel (kind: string, id: string, payload: Record<string, unknown>, expiresAt: Date, now: Date) {
      return (await c.run(() => claimIn(c.db, kind, { id, payload, expiresAt }, now))).length > 0
    },

    async claimOAuthModels (kind, claims, now) {
      // One transaction, one commit; the claims one after the other in it, so an id named twice is taken once.
      return await c.run(() => c.db.transaction(async (tx) => {
        const claimed: boolean[] = []
        for (const claim of claims) claimed.push((await claimIn(tx, kind, claim, now)).length > 0)
        return claimed
      }))
    },

    async findOAuthModel (kind: string, id: string, now: Date) {
      return await findOne(kind, id, eq(oauthModels.id, id), now)
    },

    async findOAuthModelByUserCode (kind: string, userCode: string, now: Date) {
      return await findOne(kind, userCode, eq(oauthModels.userCode, userCode), now)
    },

    async findOAuthModelByUid (kind: string, uid: string, now: Date) {
      return await findOne(kind, uid, eq(oauthModels.uid, uid), now)
    },

    async consumeOAuthModel (kind: string, id: string, now: Date) {
      if (holdsNul(id)) return false
      const consumed = await c.run(() => c.db.update(oauthModels).set({ consumedAt: now })
        .where(and(eq(oauthModels.kind, kind), eq(oauthModels.id, id), isNull(oauthModels.consumedAt))).returning({ id: oauthModels.id }))
      return consumed.length > 0
    },

    async destroyOAuthModel (kind: string, id: string) {
      if (holdsNul(id)) return
      await c.run(() => c.db.delete(oauthModels).where(and(eq(oauthModels.kind, kind), eq(oauthModels.id, id))))
    },

    async destroyOAuthModelsOfGrant (grantId: string) {
      await c.run(() => c.db.delete(oauthModels).where(eq(oauthModels.grantId, grantId)))
    },

    async listOAuthModels (kind: string, now: Date, options: { accountId?: string } = {}) {
      return c.run(async () => (await c.db.select(recordColumns).from(oauthModels)
        .where(and(eq(oauthModels.kind, kind), options.accountId === undefined ? undefined : eq(oauthModels.accountId, options.accountId), unexpired(now)))
        .orderBy(asc(oauthModels.seq))).map(decodeOAuthModel))
    },

    async pruneOAuthModels (now: Date, limit: number) {
      // By primary key; SKIP LOCKED: instances pruning at the same moment take different rows instead of waiting on each other.
      const prunable = c.db.select({ kind: oauthModels.kind, id: oauthModels.id }).from(oauthModels)
        .where(lte(oauthModels.expiresAt, now)).limit(limit).for('update', { skipLocked: true })
      return c.run(async () => (await c.db.delete(oauthModels).where(sql`(${oauthModels.kind}, ${oauthModels.id}) in ${prunable}`)).rowCount ?? 0)
    }
  }
}

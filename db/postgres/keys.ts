import type { SigningKeysStore } from '../store.js'
import { and, count, eq, inArray, sql } from 'drizzle-orm'
import type { SigningKeyAlgorithm, SigningKeyRecord } from '../store.js'
import { signingKeys } from './schema.js'
import type { PostgresConnection } from './connection.js'

/** The keys of the PostgreSQL store (db/store/keys.ts). */
export function keysQueries (c: PostgresConnection): SigningKeysStore {
  return {
    async listSigningKeys () {
      return c.run(() => c.db.select().from(signingKeys).orderBy(signingKeys.createdAt))
    },

    async addSigningKey (key: SigningKeyRecord, { onlyIfNoneOf }: { onlyIfNoneOf?: readonly SigningKeyAlgorithm[] } = {}) {
      await c.run(() => c.transaction(async (tx) => {
        // Instances starting together serialise here (the lock ends with the transaction), so with
        // onlyIfNoneOf the first key of its kind stored is the only one.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext('account-service signing keys ' || current_schema()))`)
        if (onlyIfNoneOf !== undefined) {
          const [{ keys }] = await tx.select({ keys: count() }).from(signingKeys).where(inArray(signingKeys.algorithm, [...onlyIfNoneOf]))
          if (keys > 0) return
        }
        await tx.insert(signingKeys).values(key)
      }))
    },

    async replaceSigningKeyPrivateHalf (kid: string, expected: string, replacement: string | null) {
      const result = await c.run(() => c.db.update(signingKeys).set({ privateKeyPem: replacement })
        .where(and(eq(signingKeys.kid, kid), eq(signingKeys.privateKeyPem, expected))))
      return result.rowCount === 1
    }
  }
}

import type { SigningKeysStore } from '../store.js'
import { and, count, eq, inArray } from 'drizzle-orm'
import type { SigningKeyAlgorithm, SigningKeyRecord } from '../store.js'
import { signingKeys } from './schema.js'
import type { SqliteConnection } from './connection.js'

/** The keys of the SQLite store (db/store/keys.ts). */
export function keysQueries (c: SqliteConnection): SigningKeysStore {
  return {
    async listSigningKeys () {
      return c.run(() => c.db.select().from(signingKeys).orderBy(signingKeys.createdAt).all())
    },

    async addSigningKey (key: SigningKeyRecord, { onlyIfNoneOf }: { onlyIfNoneOf?: readonly SigningKeyAlgorithm[] } = {}) {
      c.run(() => c.db.transaction((tx) => {
        if (onlyIfNoneOf !== undefined &&
          (tx.select({ keys: count() }).from(signingKeys).where(inArray(signingKeys.algorithm, [...onlyIfNoneOf])).get()?.keys ?? 0) > 0) return
        tx.insert(signingKeys).values(key).run()
      }, { behavior: 'immediate' }))
    },

    async replaceSigningKeyPrivateHalf (kid: string, expected: string, replacement: string | null) {
      return c.run(() => c.db.update(signingKeys).set({ privateKeyPem: replacement })
        .where(and(eq(signingKeys.kid, kid), eq(signingKeys.privateKeyPem, expected))).run().changes === 1)
    }
  }
}

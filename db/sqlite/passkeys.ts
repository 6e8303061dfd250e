import type { PasskeysStore } from '../store.js'
import { and, asc, eq, lte, sql } from 'drizzle-orm'
import type { NewPasskey, NewWebauthnChallenge, WebauthnChallengePurpose } from '../store.js'
import { passkeys, webauthnChallenges } from './schema.js'
import { passkeyRow, toPasskey, counterGrows } from './queries.js'
import type { SqliteConnection } from './connection.js'

/** The passkeys of the SQLite store (db/store/passkeys.ts). */
export function passkeysQueries (c: SqliteConnection): PasskeysStore {
  return {
    async createPasskey (passkey: NewPasskey, now: Date) {
      return c.run(() => c.db.insert(passkeys).values(passkeyRow(passkey, now)).onConflictDoNothing().run().changes > 0)
    },

    async listPasskeys (userId: number) {
      return c.run(() => c.db.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(asc(passkeys.createdAt), asc(sql`rowid`)).all().map(toPasskey))
    },

    async findPasskeyByCredentialId (credentialId: string) {
      return c.run(() => {
        const row = c.db.select().from(passkeys).where(eq(passkeys.credentialId, credentialId)).get()
        return row === undefined ? undefined : toPasskey(row)
      })
    },

    async renamePasskey (userId: number, id: string, name: string) {
      return c.run(() => {
        const rows = c.db.update(passkeys).set({ name }).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId))).returning().all()
        return rows.length === 0 ? undefined : toPasskey(rows[0])
      })
    },

    async deletePasskey (userId: number, id: string) {
      return c.run(() => c.db.delete(passkeys).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId))).run().changes > 0)
    },

    async recordPasskeyUse (id: string, counter: number, now: Date) {
      // One conditional statement: of two logins racing with counters n and n+1, a later write of n is refused.
      return c.run(() => c.db.update(passkeys).set({ counter, lastUsedAt: now })
        .where(and(eq(passkeys.id, id), counterGrows(passkeys.counter, counter))).run().changes > 0)
    },

    async createWebauthnChallenge (challenge: NewWebauthnChallenge, now: Date) {
      c.run(() => c.db.transaction((tx) => {
        tx.delete(webauthnChallenges).where(lte(webauthnChallenges.expiresAt, now)).run()
        tx.insert(webauthnChallenges).values({ ...challenge, createdAt: now }).run()
      }))
    },

    async consumeWebauthnChallenge (challengeHash: string, purpose: WebauthnChallengePurpose, now: Date, userId?: number) {
      return c.run(() => {
        const owner = userId === undefined ? undefined : eq(webauthnChallenges.userId, userId)
        const [used] = c.db.delete(webauthnChallenges)
          .where(and(eq(webauthnChallenges.challengeHash, challengeHash), eq(webauthnChallenges.purpose, purpose), owner))
          .returning({ expiresAt: webauthnChallenges.expiresAt }).all()
        return used !== undefined && used.expiresAt > now
      })
    }
  }
}

import type { PasskeysStore } from '../store.js'
import { and, asc, eq, lt, lte } from 'drizzle-orm'
import type { NewPasskey, NewWebauthnChallenge, WebauthnChallengePurpose } from '../store.js'
import { passkeys, webauthnChallenges } from './schema.js'
import { passkeyRow, toPasskey } from './queries.js'
import type { PostgresConnection } from './connection.js'

/** The passkeys of the PostgreSQL store (db/store/passkeys.ts). */
export function passkeysQueries (c: PostgresConnection): PasskeysStore {
  return {
    async createPasskey (passkey: NewPasskey, now: Date) {
      return c.run(async () => ((await c.db.insert(passkeys).values(passkeyRow(passkey, now)).onConflictDoNothing()).rowCount ?? 0) > 0)
    },

    async listPasskeys (userId: number) {
      const rows = await c.run(() => c.db.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(asc(passkeys.createdAt), asc(passkeys.id)))
      return rows.map(toPasskey)
    },

    async findPasskeyByCredentialId (credentialId: string) {
      const [row] = await c.run(() => c.db.select().from(passkeys).where(eq(passkeys.credentialId, credentialId)))
      return row === undefined ? undefined : toPasskey(row)
    },

    async renamePasskey (userId: number, id: string, name: string) {
      const [row] = await c.run(() => c.db.update(passkeys).set({ name }).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId))).returning())
      return row === undefined ? undefined : toPasskey(row)
    },

    async deletePasskey (userId: number, id: string) {
      return c.run(async () => ((await c.db.delete(passkeys).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))).rowCount ?? 0) > 0)
    },

    async recordPasskeyUse (id: string, counter: number, now: Date) {
      // One conditional statement (the row lock orders racing logins): a counter that did not grow writes nothing.
      const growing = counter === 0 ? eq(passkeys.counter, 0) : lt(passkeys.counter, counter)
      return c.run(async () => ((await c.db.update(passkeys).set({ counter, lastUsedAt: now })
        .where(and(eq(passkeys.id, id), growing))).rowCount ?? 0) > 0)
    },

    async createWebauthnChallenge (challenge: NewWebauthnChallenge, now: Date) {
      await c.run(async () => {
        // Expired ones go first: the table holds only minutes of challenges, whoever asks for them.
        await c.db.delete(webauthnChallenges).where(lte(webauthnChallenges.expiresAt, now))
        await c.db.insert(webauthnChallenges).values({ ...challenge, createdAt: now })
      })
    },

    async consumeWebauthnChallenge (challengeHash: string, purpose: WebauthnChallengePurpose, now: Date, userId?: number) {
      const owner = userId === undefined ? undefined : eq(webauthnChallenges.userId, userId)
      // DELETE … RETURNING: of two requests with one challenge, only one gets the row.
      const [used] = await c.run(() => c.db.delete(webauthnChallenges)
        .where(and(eq(webauthnChallenges.challengeHash, challengeHash), eq(webauthnChallenges.purpose, purpose), owner))
        .returning({ expiresAt: webauthnChallenges.expiresAt }))
      return used !== undefined && used.expiresAt > now
    }
  }
}

import type { AccountRulesStore } from '../store.js'
import { eq, sql } from 'drizzle-orm'
import type { AddressProof, AddressProofOutcome, MailMessage, UserChanges } from '../store.js'
import * as outbox from './mail-outbox.js'
import { mailOutbox, sessions, users } from './schema.js'
import { revokeTokensWith, IdentityConflict, voidOneTimeTokens, voidMfaChallenges, proveAddressIn } from './queries.js'
import type { PostgresConnection } from './connection.js'

/** The accounts of the PostgreSQL store (db/store/accounts.ts). */
export function accountsQueries (c: PostgresConnection): AccountRulesStore {
  return {
    async proveAddress (proof: AddressProof, now: Date): Promise<AddressProofOutcome> {
      try {
        return await c.run(() => c.transaction(async (tx) => await proveAddressIn(tx, proof, now)))
      } catch (error) {
        if (error instanceof IdentityConflict) return { outcome: 'identity_conflict' }
        throw error
      }
    },

    async changePassword (userId: number, passwordHash: string, now: Date, keepSessionId: string) {
      return await c.run(() => c.transaction(async (tx) => {
        await tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId))
        await tx.execute(voidOneTimeTokens(userId, now))
        const ended = await revokeTokensWith(tx, sql`user_id = ${userId} and revoked_at is null and family_id <> ${keepSessionId}`, now, sql`,
        voided as (${voidMfaChallenges(userId, now)})`)
        await tx.update(sessions).set({ authenticatedAt: now }).where(eq(sessions.id, keepSessionId))
        return ended
      }))
    },

    async changeEmail (userId: number, changes: UserChanges, now: Date, notice: MailMessage) {
      return await c.run(() => c.transaction(async (tx) => {
        const [user] = await tx.update(users).set({ ...changes, updatedAt: now }).where(eq(users.id, userId)).returning()
        if (user === undefined) return { sessionsEnded: 0 }
        await tx.execute(voidOneTimeTokens(userId, now))
        await tx.insert(mailOutbox).values(outbox.outboxRow(notice, now))
        const sessionsEnded = await revokeTokensWith(tx, sql`user_id = ${userId} and revoked_at is null`, now, sql`,
        voided as (${voidMfaChallenges(userId, now)})`)
        return { user, sessionsEnded }
      }))
    }
  }
}

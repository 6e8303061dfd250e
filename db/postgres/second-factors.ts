import type { SecondFactorsStore } from '../store.js'
import { and, count, eq, gte, isNotNull, isNull, lte, or, sql } from 'drizzle-orm'
import type { MfaAttempt, MfaProof, MfaWrongCodeCap, NewMfaChallenge, SecurityEventWrite } from '../store.js'
import { insertSecurityEvent } from './events.js'
import * as outbox from './mail-outbox.js'
import { mailOutbox, mfaChallenges, recoveryCodes, totpCredentials } from './schema.js'
import { voidMfaChallenges, writeRecoveryCodes, consumeProof } from './queries.js'
import type { PostgresConnection } from './connection.js'

/** The second factors of the PostgreSQL store (db/store/second-factors.ts). */
export function secondFactorsQueries (c: PostgresConnection): SecondFactorsStore {
  return {
    async saveTotpSecret (userId: number, secret: string, now: Date) {
      // A confirmed secret is never replaced here: turning TOTP off (deleteTotp) comes first.
      const result = await c.run(() => c.db.insert(totpCredentials).values({ userId, secret, createdAt: now })
        .onConflictDoUpdate({ target: totpCredentials.userId, set: { secret, createdAt: now, lastUsedStep: null }, setWhere: isNull(totpCredentials.confirmedAt) }))
      return (result.rowCount ?? 0) > 0
    },

    async findTotp (userId: number) {
      return c.run(async () => (await c.db.select().from(totpCredentials).where(eq(totpCredentials.userId, userId)))[0])
    },

    async confirmTotp (userId: number, step: number, recoveryCodeHashes: string[], now: Date) {
      return c.run(() => c.transaction(async (tx) => {
        // The conditional update locks the row: of two confirmations at once, the second finds it confirmed.
        const confirmed = await tx.update(totpCredentials).set({ confirmedAt: now, lastUsedStep: step })
          .where(and(eq(totpCredentials.userId, userId), isNull(totpCredentials.confirmedAt)))
          .returning({ userId: totpCredentials.userId })
        if (confirmed.length === 0) return false
        await writeRecoveryCodes(tx, userId, recoveryCodeHashes, now)
        return true
      }))
    },

    async deleteTotp (userId: number, audit?: SecurityEventWrite) {
      return c.run(() => c.transaction(async (tx) => {
        await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
        await tx.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId))
        await insertSecurityEvent(tx, audit)
        return ((await tx.delete(totpCredentials).where(eq(totpCredentials.userId, userId))).rowCount ?? 0) > 0
      }))
    },

    async replaceRecoveryCodes (userId: number, codeHashes: string[], now: Date) {
      return c.run(() => c.transaction(async (tx) => {
        // The TOTP row's lock serialises this with a deletion (and with another replacement).
        const [enabled] = await tx.select({ userId: totpCredentials.userId }).from(totpCredentials)
          .where(and(eq(totpCredentials.userId, userId), isNotNull(totpCredentials.confirmedAt))).for('update')
        if (enabled === undefined) return false
        await writeRecoveryCodes(tx, userId, codeHashes, now)
        return true
      }))
    },

    async countRecoveryCodes (userId: number) {
      const [{ left }] = await c.run(() => c.db.select({ left: count() }).from(recoveryCodes)
        .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt))))
      return left
    },

    async createMfaChallenge (challenge: NewMfaChallenge, now: Date, maxFailures: number) {
      await c.run(() => c.transaction(async (tx) => {
        await tx.delete(mfaChallenges).where(and(
          eq(mfaChallenges.userId, challenge.userId),
          or(isNotNull(mfaChallenges.usedAt), lte(mfaChallenges.expiresAt, now), gte(mfaChallenges.failures, maxFailures))
        ))
        await tx.insert(mfaChallenges).values({ ...challenge, createdAt: now })
      }))
    },

    async findMfaChallenge (tokenHash: string) {
      return c.run(async () => (await c.db.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)))[0])
    },

    async voidMfaChallenges (userId: number, now: Date) {
      await c.run(() => c.db.execute(voidMfaChallenges(userId, now)))
    },

    async attemptMfaChallenge (tokenHash: string, proof: MfaProof | null, now: Date, maxFailures: number, cap: MfaWrongCodeCap): Promise<MfaAttempt> {
      return c.run(() => c.transaction(async (tx): Promise<MfaAttempt> => {
        // FOR UPDATE: attempts with one challenge wait for each other and each sees the one before it.
        const [challenge] = await tx.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)).for('update')
        if (challenge === undefined || challenge.usedAt !== null || challenge.expiresAt <= now || challenge.failures >= maxFailures) return { outcome: 'invalid' }
        const { userId } = challenge
        const ofUser = eq(totpCredentials.userId, userId)
        // The TOTP row's lock (after the challenge's, the order every writer of both takes): attempts of the
        // account's other mfa_tokens wait too, so parallel wrong codes never count past the cap.
        const [totp] = await tx.select({ failedCodes: totpCredentials.failedCodes }).from(totpCredentials).where(ofUser).for('update')
        if (totp !== undefined && totp.failedCodes >= cap.maxWrongCodes) return { outcome: 'locked', userId }
        if (proof !== null && await consumeProof(tx, userId, proof, now)) {
          await tx.update(mfaChallenges).set({ usedAt: now }).where(eq(mfaChallenges.tokenHash, tokenHash))
          await tx.update(totpCredentials).set({ failedCodes: 0 }).where(ofUser)
          return { outcome: 'passed', userId }
        }
        await tx.update(mfaChallenges).set({ failures: sql`${mfaChallenges.failures} + 1` }).where(eq(mfaChallenges.tokenHash, tokenHash))
        const refused = { outcome: 'refused' as const, userId, failures: challenge.failures + 1 }
        if (totp === undefined) return refused
        await tx.update(totpCredentials).set({ failedCodes: sql`${totpCredentials.failedCodes} + 1` }).where(ofUser)
        if (totp.failedCodes + 1 < cap.maxWrongCodes) return refused
        if (cap.lockedMail !== undefined) await tx.insert(mailOutbox).values(outbox.outboxRow(cap.lockedMail, now))
        return { ...refused, lockedNow: true }
      }))
    },

    async forgiveMfaFailures (userId: number, keepAtMost: number) {
      await c.run(() => c.db.update(totpCredentials).set({ failedCodes: sql`least(${totpCredentials.failedCodes}, ${keepAtMost})` })
        .where(eq(totpCredentials.userId, userId)))
    }
  }
}

import type { SecondFactorsStore } from '../store.js'
import { and, count, eq, gte, isNotNull, isNull, lte, or, sql } from 'drizzle-orm'
import type { MfaAttempt, MfaProof, MfaWrongCodeCap, NewMfaChallenge, SecurityEventWrite } from '../store.js'
import { insertSecurityEvent } from './events.js'
import * as outbox from './mail-outbox.js'
import { mailOutbox, mfaChallenges, recoveryCodes, totpCredentials } from './schema.js'
import { type Tx, voidMfaChallenges, consumeProof } from './queries.js'
import type { SqliteConnection } from './connection.js'

/** The second factors of the SQLite store (db/store/second-factors.ts). */
export function secondFactorsQueries (c: SqliteConnection): SecondFactorsStore {
  /** The user's recovery codes become `codeHashes`, all unused (inside a transaction). */
  function writeRecoveryCodes (tx: Tx, userId: number, codeHashes: string[], now: Date) {
    tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
    if (codeHashes.length > 0) tx.insert(recoveryCodes).values(codeHashes.map(codeHash => ({ userId, codeHash, createdAt: now }))).run()
  }

  return {
    async saveTotpSecret (userId: number, secret: string, now: Date) {
      // A confirmed secret is never replaced here: turning TOTP off (deleteTotp) comes first.
      return c.run(() => c.db.insert(totpCredentials).values({ userId, secret, createdAt: now })
        .onConflictDoUpdate({ target: totpCredentials.userId, set: { secret, createdAt: now, lastUsedStep: null }, setWhere: isNull(totpCredentials.confirmedAt) })
        .run().changes > 0)
    },

    async findTotp (userId: number) {
      return c.run(() => c.statements.totpByUser.get({ userId }))
    },

    async confirmTotp (userId: number, step: number, recoveryCodeHashes: string[], now: Date) {
      return c.run(() => c.db.transaction((tx) => {
        const confirmed = tx.update(totpCredentials).set({ confirmedAt: now, lastUsedStep: step })
          .where(and(eq(totpCredentials.userId, userId), isNull(totpCredentials.confirmedAt))).run().changes > 0
        if (confirmed) writeRecoveryCodes(tx, userId, recoveryCodeHashes, now)
        return confirmed
      }, { behavior: 'immediate' }))
    },

    async deleteTotp (userId: number, audit?: SecurityEventWrite) {
      return c.run(() => c.db.transaction((tx) => {
        tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
        tx.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId)).run()
        insertSecurityEvent(tx, audit)
        return tx.delete(totpCredentials).where(eq(totpCredentials.userId, userId)).run().changes > 0
      }, { behavior: 'immediate' }))
    },

    async replaceRecoveryCodes (userId: number, codeHashes: string[], now: Date) {
      return c.run(() => c.db.transaction((tx) => {
        const enabled = tx.select({ one: sql`1` }).from(totpCredentials)
          .where(and(eq(totpCredentials.userId, userId), isNotNull(totpCredentials.confirmedAt))).get() !== undefined
        if (enabled) writeRecoveryCodes(tx, userId, codeHashes, now)
        return enabled
      }, { behavior: 'immediate' }))
    },

    async countRecoveryCodes (userId: number) {
      return c.run(() => c.db.select({ left: count() }).from(recoveryCodes)
        .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt))).get()?.left ?? 0)
    },

    async createMfaChallenge (challenge: NewMfaChallenge, now: Date, maxFailures: number) {
      c.run(() => c.db.transaction((tx) => {
        tx.delete(mfaChallenges).where(and(
          eq(mfaChallenges.userId, challenge.userId),
          or(isNotNull(mfaChallenges.usedAt), lte(mfaChallenges.expiresAt, now), gte(mfaChallenges.failures, maxFailures))
        )).run()
        tx.insert(mfaChallenges).values({ ...challenge, createdAt: now }).run()
      }, { behavior: 'immediate' }))
    },

    async findMfaChallenge (tokenHash: string) {
      return c.run(() => c.db.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)).get())
    },

    async voidMfaChallenges (userId: number, now: Date) {
      c.run(() => voidMfaChallenges(c.db, userId, now))
    },

    async attemptMfaChallenge (tokenHash: string, proof: MfaProof | null, now: Date, maxFailures: number, cap: MfaWrongCodeCap): Promise<MfaAttempt> {
      // Synchronous from the challenge's check to its last write, under the write lock: attempts cannot interleave.
      return c.run(() => c.db.transaction((tx): MfaAttempt => {
        const challenge = tx.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)).get()
        if (challenge === undefined || challenge.usedAt !== null || challenge.expiresAt <= now || challenge.failures >= maxFailures) return { outcome: 'invalid' }
        const { userId } = challenge
        const ofUser = eq(totpCredentials.userId, userId)
        const failedCodes = tx.select({ failedCodes: totpCredentials.failedCodes }).from(totpCredentials).where(ofUser).get()?.failedCodes
        if (failedCodes !== undefined && failedCodes >= cap.maxWrongCodes) return { outcome: 'locked', userId }
        if (proof !== null && consumeProof(tx, userId, proof, now)) {
          tx.update(mfaChallenges).set({ usedAt: now }).where(eq(mfaChallenges.tokenHash, tokenHash)).run()
          tx.update(totpCredentials).set({ failedCodes: 0 }).where(ofUser).run()
          return { outcome: 'passed', userId }
        }
        tx.update(mfaChallenges).set({ failures: sql`${mfaChallenges.failures} + 1` }).where(eq(mfaChallenges.tokenHash, tokenHash)).run()
        const refused = { outcome: 'refused' as const, userId, failures: challenge.failures + 1 }
        if (failedCodes === undefined) return refused
        tx.update(totpCredentials).set({ failedCodes: sql`${totpCredentials.failedCodes} + 1` }).where(ofUser).run()
        if (failedCodes + 1 < cap.maxWrongCodes) return refused
        if (cap.lockedMail !== undefined) tx.insert(mailOutbox).values(outbox.outboxRow(cap.lockedMail, now)).run()
        return { ...refused, lockedNow: true }
      }, { behavior: 'immediate' }))
    },

    async forgiveMfaFailures (userId: number, keepAtMost: number) {
      c.run(() => c.db.update(totpCredentials).set({ failedCodes: sql`min(${totpCredentials.failedCodes}, ${keepAtMost})` })
        .where(eq(totpCredentials.userId, userId)).run())
    }
  }
}

import type { EmailCodesStore } from '../store.js'
import { and, count, desc, eq, gt, gte, inArray, isNull, lt, sql } from 'drizzle-orm'
import type { EmailCodeQuota, MailMessage, NewEmailCode } from '../store.js'
import * as outbox from './mail-outbox.js'
import { emailCodes, mailOutbox } from './schema.js'
import type { PostgresConnection } from './connection.js'

/** The mailed sign-in codes of the PostgreSQL store (db/store/email-codes.ts). */
export function emailCodesQueries (c: PostgresConnection): EmailCodesStore {
  return {
    async issueEmailCode (code: NewEmailCode, now: Date, { quotas = [], mail }: { quotas?: EmailCodeQuota[], mail?: MailMessage }) {
      return c.run(() => c.transaction(async (tx) => {
        // The address may have no user row to lock: a transaction-scoped advisory lock on it serialises two
        // requests issuing at once (as SQLite's write lock does), so quotas hold and one code stays live.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`email-code ${code.email}`}))`)
        for (const { since, max } of quotas) {
          const [{ issued }] = await tx.select({ issued: count() }).from(emailCodes)
            .where(and(eq(emailCodes.email, code.email), gte(emailCodes.createdAt, since)))
          if (issued >= max) return false
        }
        // A newer code voids the older: only the last one mailed works.
        await tx.update(emailCodes).set({ usedAt: now }).where(and(eq(emailCodes.email, code.email), isNull(emailCodes.usedAt)))
        await tx.insert(emailCodes).values({ ...code, createdAt: now })
        if (mail !== undefined) await tx.insert(mailOutbox).values(outbox.outboxRow(mail, now))
        return true
      }))
    },

    async reserveEmailCodeAttempt (email: string, now: Date, maxAttempts: number) {
      const live = and(eq(emailCodes.email, email), isNull(emailCodes.usedAt), gt(emailCodes.expiresAt, now))
      // The conditions stand on the updated row too: a reservation that waited on another's row lock re-reads the
      // row (READ COMMITTED) and finds the count raised, so racing guesses cannot pass the cap.
      return c.run(async () => (await c.db.update(emailCodes).set({ attempts: sql`${emailCodes.attempts} + 1` })
        .where(and(live, lt(emailCodes.attempts, maxAttempts),
          inArray(emailCodes.id, c.db.select({ id: emailCodes.id }).from(emailCodes).where(live).orderBy(desc(emailCodes.id)).limit(1))))
        .returning())[0])
    },

    async releaseEmailCodeAttempt (id: number) {
      await c.run(() => c.db.update(emailCodes).set({ attempts: sql`greatest(${emailCodes.attempts} - 1, 0)` }).where(eq(emailCodes.id, id)))
    },

    async useEmailCode (id: number, now: Date) {
      return c.run(async () => ((await c.db.update(emailCodes).set({ usedAt: now })
        .where(and(eq(emailCodes.id, id), isNull(emailCodes.usedAt), gt(emailCodes.expiresAt, now)))).rowCount ?? 0) > 0)
    },

    async deleteExpiredEmailCodes (before: Date) {
      return c.run(async () => (await c.db.delete(emailCodes).where(lt(emailCodes.expiresAt, before))).rowCount ?? 0)
    }
  }
}

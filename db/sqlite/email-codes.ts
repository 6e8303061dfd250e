import type { EmailCodesStore } from '../store.js'
import { and, count, desc, eq, gt, gte, inArray, isNull, lt, sql } from 'drizzle-orm'
import type { EmailCodeQuota, MailMessage, NewEmailCode } from '../store.js'
import * as outbox from './mail-outbox.js'
import { emailCodes, mailOutbox } from './schema.js'
import type { SqliteConnection } from './connection.js'

/** The mailed sign-in codes of the SQLite store (db/store/email-codes.ts). */
export function emailCodesQueries (c: SqliteConnection): EmailCodesStore {
  return {
    async issueEmailCode (code: NewEmailCode, now: Date, { quotas = [], mail }: { quotas?: EmailCodeQuota[], mail?: MailMessage }) {
      // Immediate: the write lock from the first read, so two requests at once cannot both pass a quota.
      return c.run(() => c.db.transaction((tx) => {
        for (const { since, max } of quotas) {
          const issued = tx.select({ issued: count() }).from(emailCodes)
            .where(and(eq(emailCodes.email, code.email), gte(emailCodes.createdAt, since))).get()?.issued ?? 0
          if (issued >= max) return false
        }
        // A newer code voids the older: only the last one mailed works.
        tx.update(emailCodes).set({ usedAt: now }).where(and(eq(emailCodes.email, code.email), isNull(emailCodes.usedAt))).run()
        tx.insert(emailCodes).values({ ...code, createdAt: now }).run()
        if (mail !== undefined) tx.insert(mailOutbox).values(outbox.outboxRow(mail, now)).run()
        return true
      }, { behavior: 'immediate' }))
    },

    async reserveEmailCodeAttempt (email: string, now: Date, maxAttempts: number) {
      const live = and(eq(emailCodes.email, email), isNull(emailCodes.usedAt), gt(emailCodes.expiresAt, now))
      // One statement: SQLite runs one writer at a time, so no two reservations see the same count.
      return c.run(() => c.db.update(emailCodes).set({ attempts: sql`${emailCodes.attempts} + 1` })
        .where(and(live, lt(emailCodes.attempts, maxAttempts),
          inArray(emailCodes.id, c.db.select({ id: emailCodes.id }).from(emailCodes).where(live).orderBy(desc(emailCodes.id)).limit(1))))
        .returning().get())
    },

    async releaseEmailCodeAttempt (id: number) {
      c.run(() => c.db.update(emailCodes).set({ attempts: sql`max(${emailCodes.attempts} - 1, 0)` }).where(eq(emailCodes.id, id)).run())
    },

    async useEmailCode (id: number, now: Date) {
      return c.run(() => c.db.update(emailCodes).set({ usedAt: now })
        .where(and(eq(emailCodes.id, id), isNull(emailCodes.usedAt), gt(emailCodes.expiresAt, now))).run().changes > 0)
    },

    async deleteExpiredEmailCodes (before: Date) {
      return c.run(() => c.db.delete(emailCodes).where(lt(emailCodes.expiresAt, before)).run().changes)
    }
  }
}

import type { OneTimeTokensStore } from '../store.js'
import { and, count, desc, eq, gte, isNull, notInArray, sql } from 'drizzle-orm'
import type { MailMessage, NewOneTimeToken, OneTimeTokenPurpose, OneTimeTokenQuota, OneTimeTokenRecord } from '../store.js'
import * as outbox from './mail-outbox.js'
import { mailOutbox, oneTimeTokens } from './schema.js'
import { type Db, voidOneTimeTokens } from './queries.js'
import type { SqliteConnection } from './connection.js'

/** The one time tokens of the SQLite store (db/store/one-time-tokens.ts). */
export function oneTimeTokensQueries (c: SqliteConnection): OneTimeTokensStore {
  function countIssued (tx: Pick<Db, 'select'>, userId: number, purpose: OneTimeTokenPurpose, since: Date): number {
    return tx.select({ issued: count() }).from(oneTimeTokens)
      .where(and(eq(oneTimeTokens.userId, userId), eq(oneTimeTokens.purpose, purpose), gte(oneTimeTokens.createdAt, since)))
      .get()?.issued ?? 0
  }

  return {
    async issueOneTimeToken (token: NewOneTimeToken, now: Date, { liveLimit, quotas = [], mail }: { liveLimit: number, quotas?: OneTimeTokenQuota[], mail?: MailMessage }) {
      const sameKind = and(eq(oneTimeTokens.userId, token.userId), eq(oneTimeTokens.purpose, token.purpose), isNull(oneTimeTokens.usedAt))
      return c.run(() => c.db.transaction((tx) => {
        for (const { since, max } of quotas) {
          if (countIssued(tx, token.userId, token.purpose, since) >= max) return false
        }
        tx.insert(oneTimeTokens).values({ ...token, createdAt: now }).run()
        const newest = tx.select({ tokenHash: oneTimeTokens.tokenHash }).from(oneTimeTokens)
          .where(sameKind).orderBy(desc(oneTimeTokens.createdAt), desc(sql`rowid`)).limit(liveLimit)
        tx.update(oneTimeTokens).set({ usedAt: now }).where(and(sameKind, notInArray(oneTimeTokens.tokenHash, newest))).run()
        if (mail !== undefined) tx.insert(mailOutbox).values(outbox.outboxRow(mail, now)).run()
        return true
      }, { behavior: 'immediate' }))
    },

    async findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined> {
      return c.run(() => c.db.select().from(oneTimeTokens).where(eq(oneTimeTokens.tokenHash, tokenHash)).get())
    },

    async useOneTimeToken (tokenHash: string, now: Date) {
      return c.run(() => c.db.transaction((tx) => {
        const [used] = tx.update(oneTimeTokens).set({ usedAt: now })
          .where(and(eq(oneTimeTokens.tokenHash, tokenHash), isNull(oneTimeTokens.usedAt)))
          .returning({ userId: oneTimeTokens.userId, purpose: oneTimeTokens.purpose }).all()
        if (used === undefined) return false
        tx.update(oneTimeTokens).set({ usedAt: now })
          .where(and(eq(oneTimeTokens.userId, used.userId), eq(oneTimeTokens.purpose, used.purpose), isNull(oneTimeTokens.usedAt))).run()
        return true
      }, { behavior: 'immediate' }))
    },

    async voidOneTimeTokens (userId: number, now: Date) {
      c.run(() => voidOneTimeTokens(c.db, userId, now))
    }
  }
}

import type { OneTimeTokensStore } from '../store.js'
import { and, count, desc, eq, gte, isNull, notInArray } from 'drizzle-orm'
import type { MailMessage, NewOneTimeToken, OneTimeTokenQuota, OneTimeTokenRecord } from '../store.js'
import * as outbox from './mail-outbox.js'
import { mailOutbox, oneTimeTokens, users } from './schema.js'
import { voidOneTimeTokens } from './queries.js'
import type { PostgresConnection } from './connection.js'

/** The one time tokens of the PostgreSQL store (db/store/one-time-tokens.ts). */
export function oneTimeTokensQueries (c: PostgresConnection): OneTimeTokensStore {
  return {
    async issueOneTimeToken (token: NewOneTimeToken, now: Date, { liveLimit, quotas = [], mail }: { liveLimit: number, quotas?: OneTimeTokenQuota[], mail?: MailMessage }) {
      const sameKind = and(eq(oneTimeTokens.userId, token.userId), eq(oneTimeTokens.purpose, token.purpose), isNull(oneTimeTokens.usedAt))
      return c.run(() => c.transaction(async (tx) => {
        // The user's row lock serialises two requests issuing at once (as SQLite's write lock does), so
        // quotas hold and at most liveLimit tokens stay unused. (NO KEY UPDATE: the insert's foreign-key check does not wait on it.)
        await tx.select({ id: users.id }).from(users).where(eq(users.id, token.userId)).for('no key update')
        for (const { since, max } of quotas) {
          const [{ issued }] = await tx.select({ issued: count() }).from(oneTimeTokens)
            .where(and(eq(oneTimeTokens.userId, token.userId), eq(oneTimeTokens.purpose, token.purpose), gte(oneTimeTokens.createdAt, since)))
          if (issued >= max) return false
        }
        await tx.insert(oneTimeTokens).values({ ...token, createdAt: now })
        const newest = tx.select({ tokenHash: oneTimeTokens.tokenHash }).from(oneTimeTokens)
          .where(sameKind).orderBy(desc(oneTimeTokens.createdAt), desc(oneTimeTokens.tokenHash)).limit(liveLimit)
        await tx.update(oneTimeTokens).set({ usedAt: now }).where(and(sameKind, notInArray(oneTimeTokens.tokenHash, newest)))
        if (mail !== undefined) await tx.insert(mailOutbox).values(outbox.outboxRow(mail, now))
        return true
      }))
    },

    async findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined> {
      return c.run(async () => (await c.db.select().from(oneTimeTokens).where(eq(oneTimeTokens.tokenHash, tokenHash)))[0])
    },

    async useOneTimeToken (tokenHash: string, now: Date) {
      // The row lock of the conditional update: of two concurrent uses, the second finds used_at set.
      return c.run(() => c.transaction(async (tx) => {
        const [used] = await tx.update(oneTimeTokens).set({ usedAt: now })
          .where(and(eq(oneTimeTokens.tokenHash, tokenHash), isNull(oneTimeTokens.usedAt)))
          .returning({ userId: oneTimeTokens.userId, purpose: oneTimeTokens.purpose })
        if (used === undefined) return false
        await tx.update(oneTimeTokens).set({ usedAt: now })
          .where(and(eq(oneTimeTokens.userId, used.userId), eq(oneTimeTokens.purpose, used.purpose), isNull(oneTimeTokens.usedAt)))
        return true
      }))
    },

    async voidOneTimeTokens (userId: number, now: Date) {
      await c.run(() => c.db.execute(voidOneTimeTokens(userId, now)))
    }
  }
}

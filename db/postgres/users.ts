import type { UsersStore } from '../store.js'
import { and, asc, eq, gt, inArray, isNull, sql } from 'drizzle-orm'
import type { AuditOf, ImportedUser, ImportOutcome, NewUser, OutgoingWebhook, SecurityEventWrite, UserChanges, UserRecord, UserRole, UserSearch, WebhookOf } from '../store.js'
import { userSearchCondition } from '../user-search.js'
import { users } from './schema.js'
import { logRevocations, revokeTokensWith, type Transaction, voidMfaChallenges } from './queries.js'
import type { PostgresConnection } from './connection.js'
import { insertSecurityEvent } from './events.js'
import { insertWebhook } from './webhooks.js'

/** The users of the PostgreSQL store (db/store/users.ts). */
export function usersQueries (c: PostgresConnection): UsersStore {
  return {
    async createUser (user: NewUser & { role?: UserRole }, webhook?: WebhookOf<UserRecord>, audit?: AuditOf<UserRecord>) {
      const now = new Date()
      const insert = (db: Transaction | typeof c.db) => db.insert(users).values({ ...user, createdAt: now, updatedAt: now }).returning()
      if (webhook === undefined && audit === undefined) return c.run(async () => (await insert(c.db))[0])
      // The user (with its role), its user.created event and its audit row together.
      return c.run(() => c.transaction(async (tx) => {
        const [created] = await insert(tx)
        await insertWebhook(tx, webhook?.(created))
        await insertSecurityEvent(tx, audit?.(created))
        return created
      }))
    },

    async importUsers (batch: ImportedUser[], now: Date) {
      if (batch.length === 0) return []
      return c.run(() => c.db.transaction(async (tx) => {
        // One statement a batch; ON CONFLICT without a target skips a row that any unique index refuses
        // (the email, the lower-cased username), a row earlier in the same batch included.
        const inserted = await tx.insert(users)
          .values(batch.map(user => ({ ...user, emailVerifiedAt: user.emailVerified ? now : null, createdAt: now, updatedAt: now })))
          .onConflictDoNothing()
          .returning({ email: users.email, username: users.username })
        // Emails are unique: each written row is known by its email (and told from a same-email row of the batch by its username).
        const unclaimed = new Map(inserted.map(row => [row.email, row.username]))
        const missed = batch.filter(user => !unclaimed.has(user.email)).map(user => user.email)
        const takenBefore = new Set(missed.length === 0
          ? []
          : (await tx.select({ email: users.email }).from(users).where(inArray(users.email, missed))).map(row => row.email))
        return batch.map((user): ImportOutcome => {
          if (unclaimed.has(user.email) && unclaimed.get(user.email) === user.username) {
            unclaimed.delete(user.email)
            return 'imported'
          }
          // Taken by a user before the batch, or by a row of the batch written before this one.
          return takenBefore.has(user.email) || inserted.some(row => row.email === user.email) ? 'email_taken' : 'username_taken'
        })
      }))
    },

    async findUserById (id: number) {
      return c.run(async () => (await c.db.select().from(users).where(eq(users.id, id)))[0])
    },

    async findUserByEmail (email: string) {
      return c.run(async () => (await c.db.select().from(users).where(eq(users.email, email)))[0])
    },

    async updateUser (id: number, changes: UserChanges, webhook?: WebhookOf<UserRecord>) {
      const update = (db: Transaction | typeof c.db) => db.update(users).set({ ...changes, updatedAt: new Date() }).where(eq(users.id, id)).returning()
      if (webhook === undefined) return c.run(async () => (await update(c.db))[0])
      return c.run(() => c.transaction(async (tx) => {
        const [updated] = await update(tx)
        if (updated !== undefined) await insertWebhook(tx, webhook(updated))
        return updated
      }))
    },

    async deleteUser (id: number, webhook?: OutgoingWebhook) {
      // The refresh tokens, sessions and one-time tokens go with the user (ON DELETE CASCADE); the
      // log row of each live session, written in the same statement, tells every instance they ended.
      const now = new Date()
      // The admin's rows are kept first, in a statement of their own: the cascade would otherwise take them.
      const result = await c.run(() => c.transaction(async (tx) => {
        await tx.execute(sql`update security_events set user_id = null where user_id = ${id} and actor_id is not null`)
        const deleted = await tx.execute<{ deleted: number }>(sql`
          with logged as (${logRevocations(sql`user_id = ${id} and revoked_at is null`, now, true)}),
          deleted as (delete from users where id = ${id} returning id)
          select count(*)::int as deleted from deleted`)
        if (deleted.rows[0].deleted > 0) await insertWebhook(tx, webhook)
        return deleted
      }))
      return result.rows[0].deleted > 0
    },

    async listUsers (page: { limit: number, afterId?: number }) {
      return c.run(() => c.db.select().from(users)
        .where(gt(users.id, page.afterId ?? 0))
        .orderBy(asc(users.id))
        .limit(page.limit))
    },

    async searchUsers (search: UserSearch) {
      return c.run(() => c.db.select().from(users)
        .where(userSearchCondition(users, search))
        .orderBy(asc(users.id))
        .limit(search.limit))
    },

    async setUserRole (userId: number, role: UserRole, now: Date, audit?: SecurityEventWrite, webhook?: WebhookOf<UserRecord>) {
      // The role, its role_changed row and its user.updated: all or none.
      return c.run(() => c.transaction(async (tx) => {
        const [updated] = await tx.update(users).set({ role, updatedAt: now }).where(eq(users.id, userId)).returning()
        if (updated === undefined) return false
        await insertSecurityEvent(tx, audit)
        await insertWebhook(tx, webhook?.(updated))
        return true
      }))
    },

    async countActiveAdmins () {
      const [row] = await c.run(() => c.db.select({ count: sql<number>`count(*)::int` }).from(users).where(and(eq(users.role, 'admin'), isNull(users.disabledAt))))
      return row?.count ?? 0
    },

    async disableUser (userId: number, now: Date) {
      return c.run(() => c.transaction(async (tx) => {
        const marked = await tx.update(users).set({ disabledAt: sql`coalesce(${users.disabledAt}, ${now})`, updatedAt: now })
          .where(eq(users.id, userId)).returning({ id: users.id })
        if (marked.length === 0) return undefined
        return await revokeTokensWith(tx, sql`user_id = ${userId} and revoked_at is null`, now, sql`,
          voided as (${voidMfaChallenges(userId, now)})`)
      }))
    },

    async enableUser (userId: number, now: Date) {
      return c.run(async () => ((await c.db.update(users).set({ disabledAt: null, updatedAt: now }).where(eq(users.id, userId))).rowCount ?? 0) > 0)
    },

    async setPasswordHash (userId: number, passwordHash: string | null, now: Date) {
      return c.run(async () => ((await c.db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId))).rowCount ?? 0) > 0)
    }
  }
}

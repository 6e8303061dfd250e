import type { UsersStore } from '../store.js'
import { and, asc, eq, gt, isNotNull, isNull, sql } from 'drizzle-orm'
import type { AuditOf, ImportedUser, ImportOutcome, NewUser, OutgoingWebhook, SecurityEventWrite, UserChanges, UserRecord, UserRole, UserSearch, WebhookOf } from '../store.js'
import { userSearchCondition } from '../user-search.js'
import { refreshTokens, securityEvents, users } from './schema.js'
import { logRevocations, firstRow, revokeTokens, type Tx, voidMfaChallenges } from './queries.js'
import type { SqliteConnection } from './connection.js'
import { insertSecurityEvent } from './events.js'
import { insertWebhook } from './webhooks.js'

/** The users of the SQLite store (db/store/users.ts). */
export function usersQueries (c: SqliteConnection): UsersStore {
  return {
    async createUser ({ role, ...user }: NewUser & { role?: UserRole }, webhook?: WebhookOf<UserRecord>, audit?: AuditOf<UserRecord>) {
      const insert = () => firstRow(c.statements.insertUser.all({ ...user, now: new Date() }))
      if (webhook === undefined && audit === undefined && role === undefined) return c.run(insert)
      // The user with its role, its user.created event and its audit row together (a prepared statement runs inside the transaction too).
      return c.run(() => c.db.transaction((tx) => {
        const inserted = insert()
        const created = role === undefined || role === inserted.role ? inserted : firstRow(tx.update(users).set({ role }).where(eq(users.id, inserted.id)).returning().all())
        insertWebhook(tx, webhook?.(created))
        insertSecurityEvent(tx, audit?.(created))
        return created
      }, { behavior: 'immediate' }))
    },

    async importUsers (batch: ImportedUser[], now: Date) {
      // One transaction a batch (one fsync instead of one a user); a taken email or username skips its row only.
      // Prepared statements (a built query a row cost more than the insert itself): about 4 times the rows a second.
      return c.run(() => c.db.transaction(() => batch.map((user): ImportOutcome => {
        const inserted = c.statements.importUser.all({ ...user, emailVerifiedAtMs: user.emailVerified ? now.getTime() : null, now })
        if (inserted.length > 0) return 'imported'
        return c.statements.userByEmail.get({ email: user.email }) !== undefined ? 'email_taken' : 'username_taken'
      }), { behavior: 'immediate' }))
    },

    async findUserById (id: number) {
      return c.run(() => c.statements.userById.get({ id }))
    },

    async findUserByEmail (email: string) {
      return c.run(() => c.statements.userByEmail.get({ email }))
    },

    async updateUser (id: number, changes: UserChanges, webhook?: WebhookOf<UserRecord>) {
      // all(), not get(): see firstRow
      const update = (db: Tx | typeof c.db) => db.update(users).set({ ...changes, updatedAt: new Date() }).where(eq(users.id, id)).returning().all()[0]
      if (webhook === undefined) return c.run(() => update(c.db))
      return c.run(() => c.db.transaction((tx) => {
        const updated = update(tx)
        if (updated !== undefined) insertWebhook(tx, webhook(updated))
        return updated
      }, { behavior: 'immediate' }))
    },

    async deleteUser (id: number, webhook?: OutgoingWebhook) {
      // The refresh tokens go with the user (ON DELETE CASCADE); the log tells every instance its sessions ended.
      const now = new Date()
      return c.run(() => c.db.transaction((tx) => {
        logRevocations(tx, and(eq(refreshTokens.userId, id), isNull(refreshTokens.revokedAt)), now, true)
        tx.update(securityEvents).set({ userId: null }).where(and(eq(securityEvents.userId, id), isNotNull(securityEvents.actorId))).run()
        const deleted = tx.delete(users).where(eq(users.id, id)).run().changes > 0
        if (deleted) insertWebhook(tx, webhook)
        return deleted
      }, { behavior: 'immediate' }))
    },

    async listUsers (page: { limit: number, afterId?: number }) {
      return c.run(() => c.db.select().from(users)
        .where(gt(users.id, page.afterId ?? 0))
        .orderBy(asc(users.id))
        .limit(page.limit)
        .all())
    },

    async searchUsers (search: UserSearch) {
      return c.run(() => c.db.select().from(users)
        .where(userSearchCondition(users, search))
        .orderBy(asc(users.id))
        .limit(search.limit)
        .all())
    },

    async setUserRole (userId: number, role: UserRole, now: Date, audit?: SecurityEventWrite, webhook?: WebhookOf<UserRecord>) {
      // The role, its role_changed row and its user.updated: all or none.
      return c.run(() => c.db.transaction((tx) => {
        // all(), not get(): see firstRow
        const updated = tx.update(users).set({ role, updatedAt: now }).where(eq(users.id, userId)).returning().all()[0]
        if (updated === undefined) return false
        insertSecurityEvent(tx, audit)
        insertWebhook(tx, webhook?.(updated))
        return true
      }, { behavior: 'immediate' }))
    },

    async countActiveAdmins () {
      return c.run(() => c.db.select({ count: sql<number>`count(*)` }).from(users).where(and(eq(users.role, 'admin'), isNull(users.disabledAt))).get()?.count ?? 0)
    },

    async disableUser (userId: number, now: Date) {
      return c.run(() => c.db.transaction((tx) => {
        const found = tx.update(users).set({ disabledAt: sql`coalesce(${users.disabledAt}, ${now.getTime()})`, updatedAt: now })
          .where(eq(users.id, userId)).run().changes > 0
        if (!found) return undefined
        const ended = revokeTokens(tx, and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt)), now)
        voidMfaChallenges(tx, userId, now)
        return ended
      }, { behavior: 'immediate' }))
    },

    async enableUser (userId: number, now: Date) {
      return c.run(() => c.db.update(users).set({ disabledAt: null, updatedAt: now }).where(eq(users.id, userId)).run().changes > 0)
    },

    async setPasswordHash (userId: number, passwordHash: string | null, now: Date) {
      return c.run(() => c.db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run().changes > 0)
    }
  }
}

import type { UsersStore } from '../store.js'
import { and, asc, eq, gt, isNull } from 'drizzle-orm'
import type { ImportedUser, ImportOutcome, NewUser, UserChanges } from '../store.js'
import { refreshTokens, users } from './schema.js'
import { logRevocations, firstRow } from './queries.js'
import type { SqliteConnection } from './connection.js'

/** The users of the SQLite store (db/store/users.ts). */
export function usersQueries (c: SqliteConnection): UsersStore {
  return {
    async createUser (user: NewUser) {
      return c.run(() => firstRow(c.statements.insertUser.all({ ...user, now: new Date() })))
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

    async updateUser (id: number, changes: UserChanges) {
      return c.run(() => c.db.update(users)
        .set({ ...changes, updatedAt: new Date() })
        .where(eq(users.id, id))
        .returning()
        .all()[0]) // all(), not get(): see firstRow
    },

    async deleteUser (id: number) {
      // The refresh tokens go with the user (ON DELETE CASCADE); the log tells every instance its sessions ended.
      const now = new Date()
      return c.run(() => c.db.transaction((tx) => {
        logRevocations(tx, and(eq(refreshTokens.userId, id), isNull(refreshTokens.revokedAt)), now, true)
        return tx.delete(users).where(eq(users.id, id)).run().changes > 0
      }, { behavior: 'immediate' }))
    },

    async listUsers (page: { limit: number, afterId?: number }) {
      return c.run(() => c.db.select().from(users)
        .where(gt(users.id, page.afterId ?? 0))
        .orderBy(asc(users.id))
        .limit(page.limit)
        .all())
    },

    async setPasswordHash (userId: number, passwordHash: string | null, now: Date) {
      return c.run(() => c.db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run().changes > 0)
    },

    async markEmailVerified (userId: number, email: string, now: Date) {
      return c.run(() => c.db.update(users)
        .set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now })
        .where(and(eq(users.id, userId), eq(users.email, email)))
        .run().changes > 0)
    }
  }
}

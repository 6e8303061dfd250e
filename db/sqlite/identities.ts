import type { IdentitiesStore } from '../store.js'
import { and, asc, eq } from 'drizzle-orm'
import { IdentityTakenError, type NewIdentity, type NewUser, type UnlinkOutcome, type UserRecord, type WebhookOf } from '../store.js'
import { identities, users, passkeys } from './schema.js'
import { firstRow } from './queries.js'
import type { SqliteConnection } from './connection.js'
import { insertWebhook } from './webhooks.js'

/** The identities of the SQLite store (db/store/identities.ts). */
export function identitiesQueries (c: SqliteConnection): IdentitiesStore {
  return {
    async findIdentity (provider: string, subject: string) {
      return c.run(() => c.db.select().from(identities).where(and(eq(identities.provider, provider), eq(identities.subject, subject))).get())
    },

    async listIdentities (userId: number) {
      return c.run(() => c.db.select().from(identities).where(eq(identities.userId, userId)).orderBy(asc(identities.createdAt), asc(identities.provider)).all())
    },

    async createUserWithIdentity (user: NewUser & { emailVerified?: boolean }, identity: Omit<NewIdentity, 'userId'>, now: Date, webhook?: WebhookOf<UserRecord>) {
      return c.run(() => c.db.transaction((tx) => {
        const created = firstRow(tx.insert(users).values({ ...user, emailVerifiedAt: user.emailVerified === true ? now : null, createdAt: now, updatedAt: now }).returning().all())
        const linked = tx.insert(identities).values({ ...identity, userId: created.id, createdAt: now }).onConflictDoNothing().run().changes > 0
        if (!linked) throw new IdentityTakenError()
        insertWebhook(tx, webhook?.(created))
        return created
      }, { behavior: 'immediate' }))
    },

    async linkIdentity (identity: NewIdentity, now: Date) {
      return c.run(() => c.db.insert(identities).values({ ...identity, createdAt: now }).onConflictDoNothing().run().changes > 0)
    },

    async unlinkIdentity (userId: number, provider: string): Promise<UnlinkOutcome> {
      return c.run(() => c.db.transaction((tx) => {
        const linked = tx.select({ provider: identities.provider }).from(identities).where(eq(identities.userId, userId)).all()
        if (!linked.some(identity => identity.provider === provider)) return 'not_found'
        const user = tx.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get()
        // The ways to sign in that would be left: a password, the other identities, a passkey.
        const left = (user?.passwordHash == null ? 0 : 1) + linked.length - 1 + tx.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.userId, userId)).all().length
        if (left === 0) return 'last_login_method'
        tx.delete(identities).where(and(eq(identities.userId, userId), eq(identities.provider, provider))).run()
        return 'unlinked'
      }, { behavior: 'immediate' }))
    }
  }
}

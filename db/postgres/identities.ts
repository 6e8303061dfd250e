import type { IdentitiesStore } from '../store.js'
import { and, asc, eq } from 'drizzle-orm'
import { IdentityTakenError, type NewIdentity, type NewUser, type UnlinkOutcome, type UserRecord, type WebhookOf } from '../store.js'
import { identities, users, passkeys } from './schema.js'
import type { PostgresConnection } from './connection.js'
import { insertWebhook } from './webhooks.js'

/** The identities of the PostgreSQL store (db/store/identities.ts). */
export function identitiesQueries (c: PostgresConnection): IdentitiesStore {
  return {
    async findIdentity (provider: string, subject: string) {
      return c.run(async () => (await c.db.select().from(identities).where(and(eq(identities.provider, provider), eq(identities.subject, subject))))[0])
    },

    async listIdentities (userId: number) {
      return c.run(async () => await c.db.select().from(identities).where(eq(identities.userId, userId)).orderBy(asc(identities.createdAt), asc(identities.provider)))
    },

    async createUserWithIdentity (user: NewUser & { emailVerified?: boolean }, identity: Omit<NewIdentity, 'userId'>, now: Date, webhook?: WebhookOf<UserRecord>) {
      return c.run(() => c.transaction(async (tx) => {
        const [created] = await tx.insert(users).values({ ...user, emailVerifiedAt: user.emailVerified === true ? now : null, createdAt: now, updatedAt: now }).returning()
        const linked = ((await tx.insert(identities).values({ ...identity, userId: created.id, createdAt: now }).onConflictDoNothing()).rowCount ?? 0) > 0
        if (!linked) throw new IdentityTakenError()
        await insertWebhook(tx, webhook?.(created))
        return created
      }))
    },

    async linkIdentity (identity: NewIdentity, now: Date) {
      return c.run(async () => ((await c.db.insert(identities).values({ ...identity, createdAt: now }).onConflictDoNothing()).rowCount ?? 0) > 0)
    },

    async unlinkIdentity (userId: number, provider: string): Promise<UnlinkOutcome> {
      return c.run(() => c.transaction(async (tx) => {
        // The user's row locked: two unlinks of one user (or a password change) judge one after the other.
        const [user] = await tx.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).for('update')
        const linked = await tx.select({ provider: identities.provider }).from(identities).where(eq(identities.userId, userId))
        if (!linked.some(identity => identity.provider === provider)) return 'not_found'
        // The ways to sign in that would be left: a password, the other identities, a passkey.
        const left = (user?.passwordHash == null ? 0 : 1) + linked.length - 1 + (await tx.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.userId, userId))).length
        if (left === 0) return 'last_login_method'
        await tx.delete(identities).where(and(eq(identities.userId, userId), eq(identities.provider, provider)))
        return 'unlinked'
      }))
    }
  }
}

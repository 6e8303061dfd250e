import type { AccountRulesStore } from '../store.js'
import { and, eq, isNull, ne, or } from 'drizzle-orm'
import type { AddressProof, AddressProofOutcome, ClaimedSetup, MailMessage, UserChanges } from '../store.js'
import * as outbox from './mail-outbox.js'
import { identities, mailOutbox, mfaChallenges, oneTimeTokens, recoveryCodes, refreshTokens, sessions, totpCredentials, users, passkeys, webauthnChallenges } from './schema.js'
import { type Tx, voidOneTimeTokens, revokeTokens, IdentityConflict, identityConflicts, voidMfaChallenges } from './queries.js'
import type { SqliteConnection } from './connection.js'

/** The accounts of the SQLite store (db/store/accounts.ts). */
export function accountsQueries (c: SqliteConnection): AccountRulesStore {
  function proveAddressIn (tx: Tx, { userId, email, passwordHash, identity, clearsPassword = false, keepSessionId }: AddressProof, now: Date): AddressProofOutcome {
    const user = tx.select({ email: users.email, emailVerified: users.emailVerified, passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get()
    // Before any write: an identity that cannot be linked leaves the account as it was.
    if (identity !== undefined && identityConflicts(tx, userId, identity)) return { outcome: 'identity_conflict' }
    const userTokens = and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt),
      keepSessionId === undefined ? undefined : ne(refreshTokens.familyId, keepSessionId))
    let sessionsEnded = 0
    const endAccess = () => {
      tx.update(oneTimeTokens).set({ usedAt: now }).where(and(eq(oneTimeTokens.userId, userId), isNull(oneTimeTokens.usedAt))).run()
      sessionsEnded += revokeTokens(tx, userTokens, now)
      // With the sessions, every pending second step (mfa_token), as revokeUserSessions does.
      voidMfaChallenges(tx, userId, now)
    }
    if (passwordHash !== undefined) {
      tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run()
      endAccess()
    }
    if (user === undefined || user.email !== email) return { outcome: 'email_changed', sessionsEnded }

    let claimed: ClaimedSetup | undefined
    if (!user.emailVerified) {
      // Nobody proved this address before: whoever registered it may not own it, nor what they set up.
      const passkeysRemoved = tx.delete(passkeys).where(eq(passkeys.userId, userId)).returning({ id: passkeys.id, name: passkeys.name }).all()
      tx.delete(webauthnChallenges).where(eq(webauthnChallenges.userId, userId)).run()
      tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
      tx.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId)).run()
      const totp = tx.delete(totpCredentials).where(eq(totpCredentials.userId, userId)).run().changes > 0
      const identitiesRemoved = tx.delete(identities).where(and(eq(identities.userId, userId), identity === undefined
        ? undefined
        : or(ne(identities.provider, identity.provider), ne(identities.subject, identity.subject))))
        .returning({ provider: identities.provider }).all().map(row => row.provider)
      // A provider sign-in and a mailed code clear the password; a reset replaced it above; the verification link keeps the registrant's.
      const passwordCleared = identity !== undefined || (clearsPassword && user.passwordHash !== null)
      if (identity !== undefined || clearsPassword) tx.update(users).set({ passwordHash: null }).where(eq(users.id, userId)).run()
      const removed = passkeysRemoved.length > 0 || totp || identitiesRemoved.length > 0
      // The sessions that set it all up end (and with them their access tokens, through the log); after a mailed
      // code whatever it removed: the sessions are the registrant's, and the owner signs in anew.
      if (passwordHash === undefined && (passwordCleared || removed || clearsPassword)) endAccess()
      claimed = { passwordCleared, passkeys: passkeysRemoved, totp, identities: identitiesRemoved }
      tx.update(users).set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now }).where(eq(users.id, userId)).run()
    } else if (identity !== undefined && user.passwordHash !== null) {
      // A verified account with a password: the one signing in proved the address, not the password, whose author
      // may be a squatter whose registration the owner verified. The ways in it never showed go; so does every session.
      const passkeysRemoved = tx.delete(passkeys).where(eq(passkeys.userId, userId)).returning({ id: passkeys.id, name: passkeys.name }).all()
      tx.delete(webauthnChallenges).where(eq(webauthnChallenges.userId, userId)).run()
      tx.update(users).set({ passwordHash: null, updatedAt: now }).where(eq(users.id, userId)).run()
      endAccess()
      claimed = { passwordCleared: true, passkeys: passkeysRemoved, totp: false, identities: [] }
    }
    if (identity !== undefined) {
      tx.insert(identities).values({ ...identity, userId, createdAt: now }).onConflictDoNothing().run()
      // Linked by a request that raced this one, to another user or beside ours: undo everything.
      if (identityConflicts(tx, userId, identity)) throw new IdentityConflict()
    }
    return { outcome: 'proved', claimed, sessionsEnded }
  }

  return {
    async proveAddress (proof: AddressProof, now: Date): Promise<AddressProofOutcome> {
      try {
        // Immediate: the write lock is held from the first read, so the checks hold until the commit.
        return c.run(() => c.db.transaction((tx) => proveAddressIn(tx, proof, now), { behavior: 'immediate' }))
      } catch (error) {
        if (error instanceof IdentityConflict) return { outcome: 'identity_conflict' }
        throw error
      }
    },

    async changePassword (userId: number, passwordHash: string, now: Date, keepSessionId: string) {
      const others = and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt), ne(refreshTokens.familyId, keepSessionId))
      return c.run(() => c.db.transaction((tx) => {
        tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run()
        voidOneTimeTokens(tx, userId, now)
        const ended = revokeTokens(tx, others, now)
        voidMfaChallenges(tx, userId, now)
        tx.update(sessions).set({ authenticatedAt: now }).where(eq(sessions.id, keepSessionId)).run()
        return ended
      }, { behavior: 'immediate' }))
    },

    async changeEmail (userId: number, changes: UserChanges, now: Date, notice: MailMessage) {
      return c.run(() => c.db.transaction((tx) => {
        const user = tx.update(users).set({ ...changes, updatedAt: now }).where(eq(users.id, userId)).returning().all()[0]
        if (user === undefined) return { sessionsEnded: 0 }
        voidOneTimeTokens(tx, userId, now)
        tx.insert(mailOutbox).values(outbox.outboxRow(notice, now)).run()
        const sessionsEnded = revokeTokens(tx, and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt)), now)
        voidMfaChallenges(tx, userId, now)
        return { user, sessionsEnded }
      }, { behavior: 'immediate' }))
    }
  }
}

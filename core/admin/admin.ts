import type { AccountStore, IdentityRecord, PasskeyRecord, SecurityEventRecord, SecurityEventSearch, SessionRecord, UserRecord, UserRole } from '../../db/store.js'
import type { ImportSummary, UserImport } from '../accounts/import.js'
import { createMailedTokens, type MailedTokensOptions } from '../accounts/mailed-tokens.js'
import { currentDate, type Clock } from '../clock.js'
import { AdminOnlyError, LastAdminError, MfaEnrollmentRequiredError, TargetIsAdminError, UserNotFoundError } from '../errors.js'
import type { SecurityEvents, SecurityEventType } from '../events/security-events.js'
import type { Mailer } from '../mail/mailer.js'
import { invitationMail, signInMethodNotice } from '../mails.js'
import type { Mfa } from '../mfa/mfa.js'
import { isGrantSession } from '../oauth/grant-sessions.js'
import { changeRole, isLastAdmin, roleChangedEvent, type AdminActor } from './roles.js'
import type { Sessions } from '../sessions/sessions.js'
import type { Webhooks } from '../webhooks/webhooks.js'

export { changeRole, type AdminActor } from './roles.js'

/** A user as an admin reads it: the row, its live sessions (logins apart from apps' grants), identities and second factors. */
export interface AdminUserDetails {
  user: UserRecord
  sessions: SessionRecord[]
  appSessions: SessionRecord[]
  identities: IdentityRecord[]
  totp: boolean
  passkeys: PasskeyRecord[]
}

export interface NewUserByAdmin {
  firstName: string
  lastName: string
  email: string
  username: string | null
  role?: UserRole
  /** Mail a set-password link (a password-reset token, opened at /reset-password). */
  invite: boolean
}

export interface Admin {
  /**
   * The admin rule of every /admin request: 403 FORBIDDEN for a non-admin; while ADMIN_REQUIRE_MFA is on, 403
   * MFA_ENROLLMENT_REQUIRED for an admin without a second factor (TOTP on, or a passkey) and 403 SECOND_FACTOR_REQUIRED
   * for a session that did not use one (a password or a provider's sign-in alone, until a step-up); and, for
   * a change, 403 REAUTHENTICATION_REQUIRED unless the session is fresh (REAUTH_MAX_AGE). Returns the admin.
   */
  authorize (user: UserRecord, sessionId: string, access: { change: boolean }): Promise<UserRecord>
  /** A page of users in id order; `nextAfterId` is the last id when more may follow, null otherwise. */
  searchUsers (search: { query?: string, limit: number, afterId?: number }): Promise<{ users: UserRecord[], nextAfterId: number | null }>
  /** 404 USER_NOT_FOUND. */
  userDetails (userId: number): Promise<AdminUserDetails>
  /** A new account without a password, optionally invited by mail; throws DuplicateValueError (409). */
  createUser (actor: AdminActor, user: NewUserByAdmin): Promise<UserRecord>
  /** Disables the account and ends every session of it at once (revocation log); 404 USER_NOT_FOUND. */
  disable (actor: AdminActor, userId: number): Promise<void>
  enable (actor: AdminActor, userId: number): Promise<void>
  /** Ends every session of the user (apps' grants too) and returns how many were live; 404 USER_NOT_FOUND. */
  endSessions (actor: AdminActor, userId: number): Promise<number>
  /**
   * TOTP off, recovery codes and pending second steps void, the owner mailed when it was on (the API's reset and
   * the CLI's `mfa reset`); `removed` when a setup not yet confirmed was all there was. 404 USER_NOT_FOUND.
   */
  resetMfa (actor: AdminActor, userId: number): Promise<{ totpWasOn: boolean, removed: boolean }>
  /** Deletes the user; its audit row (admin_user_deleted) outlives it with user_id null and the id in detail. */
  deleteUser (actor: AdminActor, userId: number): Promise<void>
  /**
   * Sets the role, with its role_changed row and its user.updated in the change's transaction (core/admin/roles.ts);
   * 404 USER_NOT_FOUND, 409 LAST_ADMIN for the last admin demoting itself.
   */
  changeRole (actor: AdminActor, userId: number, role: UserRole): Promise<{ user: UserRecord, changed: boolean }>
  /**
   * Users with their password hashes (core/accounts/import.ts), then the import's audit row (users_imported, no
   * user of its own): what an operator needs to follow it up, and no more than a few of its skipped lines.
   */
  importUsers (actor: AdminActor, users: ImportSource): Promise<ImportSummary>
  /** The audit trail across users, newest first. */
  events (search: SecurityEventSearch): Promise<SecurityEventRecord[]>
}

/** What an import reads: NDJSON as it comes (up to `maxBytes`), or a parsed JSON array. */
export type ImportSource =
  | { format: 'ndjson', chunks: AsyncIterable<Uint8Array | string>, maxBytes?: number }
  | { format: 'json', users: unknown }

/** The first skipped lines (line and reason) the `users_imported` event keeps; the summary lists more. */
export const AUDITED_SKIPPED_LINES = 10

export interface AdminOptions extends MailedTokensOptions {
  /** ADMIN_REQUIRE_MFA. */
  requireMfa: boolean
}

export interface AdminDependencies {
  store: Pick<AccountStore, 'searchUsers' | 'findUserById' | 'createUser' | 'disableUser' | 'enableUser' | 'revokeUserSessions' |
    'findTotp' | 'deleteTotp' | 'listPasskeys' | 'listIdentities' | 'listLiveSessions' | 'deleteUser' | 'searchSecurityEvents' |
    'issueOneTimeToken' | 'findOneTimeToken' | 'useOneTimeToken' | 'countActiveAdmins' | 'setUserRole'>
  clock: Clock
  sessions: Pick<Sessions, 'requireFresh' | 'requireSecondFactor'>
  securityEvents: Pick<SecurityEvents, 'record' | 'prepare' | 'published'>
  mfa: Pick<Mfa, 'status'>
  mailer: Pick<Mailer, 'forOutbox' | 'wake' | 'enqueue'>
  /** user.deleted: a deleted user's own events are gone with it, so this one is sent here. */
  webhooks: Pick<Webhooks, 'userEvent' | 'wake'>
  userImport: Pick<UserImport, 'importNdjson' | 'importArray'>
}

/**
 * The operators' rules (issue 22): who may use /admin, and what an admin does to accounts. Every change
 * is a security event of the target user with the admin as actor_id.
 */
export function createAdmin ({ store, clock, sessions, securityEvents, mfa, mailer, webhooks, userImport }: AdminDependencies, options: AdminOptions): Admin {
  const tokens = createMailedTokens({ store, clock, mailer }, options)

  async function existing (userId: number): Promise<UserRecord> {
    const user = await store.findUserById(userId)
    if (user === undefined) throw new UserNotFoundError()
    return user
  }

  /**
   * The user an act that shuts an account out (disable, delete, end sessions, reset the second factor) may be
   * done to (issue 33, finding 14): never another admin (409 TARGET_IS_ADMIN: a stolen admin session must not
   * lock the other admins out; the operator demotes first), nor the actor itself when it is the last enabled admin
   * (409 LAST_ADMIN). The CLI's operator (adminId null) is the one above the admins.
   */
  async function target (actor: AdminActor, userId: number, { self }: { self: 'allowed' | 'unless-last' }): Promise<UserRecord> {
    const user = await existing(userId)
    if (actor.adminId === null || user.role !== 'admin') return user
    if (user.id !== actor.adminId) throw new TargetIsAdminError()
    if (self === 'unless-last' && await isLastAdmin(store, user)) throw new LastAdminError()
    return user
  }

  // The target's id goes in detail too: an admin's rows outlive the user's deletion with user_id null (deleteUser).
  const subjectOf = (actor: AdminActor, userId: number | null, detail: Record<string, unknown>) =>
    ({ userId, actorId: actor.adminId, detail: { user_id: userId, ...detail } })
  const record = (actor: AdminActor, type: SecurityEventType, userId: number | null, detail: Record<string, unknown> = {}) =>
    securityEvents.record(type, actor.client, subjectOf(actor, userId, detail))

  return {
    async authorize (user, sessionId, { change }) {
      if (user.role !== 'admin') throw new AdminOnlyError()
      if (options.requireMfa) {
        const factors = await mfa.status(user.id)
        if (!factors.totp && !factors.passkeys) throw new MfaEnrollmentRequiredError()
        // Owning a factor is not using it (issue 33, finding 3): a passkey-only admin signs in with the password alone,
        // so a password thief would pass. This session must have used one, at its sign-in or a step-up since.
        await sessions.requireSecondFactor(sessionId)
      }
      if (change) await sessions.requireFresh(sessionId)
      return user
    },

    async searchUsers ({ query, limit, afterId }) {
      // One more than asked: whether another page follows, without a count.
      const found = await store.searchUsers({ query, limit: limit + 1, afterId })
      const users = found.slice(0, limit)
      return { users, nextAfterId: found.length > limit ? users[users.length - 1].id : null }
    },

    async userDetails (userId) {
      const user = await existing(userId)
      const [live, identities, totp, passkeys] = await Promise.all([
        store.listLiveSessions(userId, currentDate(clock)),
        store.listIdentities(userId),
        store.findTotp(userId),
        store.listPasskeys(userId)
      ])
      return {
        user,
        sessions: live.filter(session => !isGrantSession(session.id)),
        appSessions: live.filter(session => isGrantSession(session.id)),
        identities,
        totp: totp?.confirmedAt != null,
        passkeys
      }
    },

    async createUser (actor, { invite, role = 'user', ...fields }) {
      // A user made with another role is written with it and its role_changed row, in one transaction.
      const audit = role === 'user' ? undefined : (created: UserRecord) => ({ event: roleChangedEvent(created.id, 'user', role, actor, currentDate(clock)) })
      const user = await store.createUser({ ...fields, passwordHash: null, role }, undefined, audit)
      let invited = false
      if (invite) {
        // A password-reset token: the link opens /reset-password, where the new user chooses a password (and proves the address).
        invited = await tokens.issueWithMail(user, 'reset_password', (token) => invitationMail(user.email, tokens.linkOf('/reset-password', token), options.passwordResetTtlSeconds))
        mailer.wake()
      }
      await record(actor, 'admin_user_created', user.id, { role: user.role, invited })
      return user
    },

    async disable (actor, userId) {
      await target(actor, userId, { self: 'unless-last' })
      const ended = await store.disableUser(userId, currentDate(clock))
      if (ended === undefined) throw new UserNotFoundError()
      await record(actor, 'account_disabled', userId, { sessions: ended })
    },

    async enable (actor, userId) {
      if (!await store.enableUser(userId, currentDate(clock))) throw new UserNotFoundError()
      await record(actor, 'account_enabled', userId)
    },

    async endSessions (actor, userId) {
      await target(actor, userId, { self: 'allowed' })
      const ended = await store.revokeUserSessions(userId, currentDate(clock))
      await record(actor, 'admin_sessions_revoked', userId, { sessions: ended })
      return ended
    },

    async resetMfa (actor, userId) {
      const user = await target(actor, userId, { self: 'allowed' })
      const wasOn = (await store.findTotp(userId))?.confirmedAt != null
      // The second factor goes with its audit row (and the mfa.changed it sends): both or neither.
      const audit = await securityEvents.prepare('admin_mfa_reset', actor.client, subjectOf(actor, userId, { totp_was_on: wasOn }))
      const removed = await store.deleteTotp(userId, audit)
      securityEvents.published(audit)
      // In the outbox before the answer, as when the owner turns it off: whoever asked support for it may not be the owner.
      if (wasOn) await mailer.enqueue(signInMethodNotice(user.email, { kind: 'totp_reset' }, currentDate(clock), actor.client))
      return { totpWasOn: wasOn, removed }
    },

    async deleteUser (actor, userId) {
      const user = await target(actor, userId, { self: 'unless-last' })
      // user.deleted is written in the deletion's transaction: both or neither.
      if (!await store.deleteUser(userId, webhooks.userEvent('user.deleted')?.(user))) throw new UserNotFoundError()
      webhooks.wake()
      // The user's own events went with it (ON DELETE CASCADE); this one is the admin's and stays.
      await record(actor, 'admin_user_deleted', null, { user_id: userId, email: user.email })
    },

    changeRole: async (actor, userId, role) => await changeRole({ store, webhooks }, userId, role, actor, currentDate(clock)),

    async importUsers (actor, users) {
      const summary = users.format === 'ndjson'
        ? await userImport.importNdjson(users.chunks, { maxBytes: users.maxBytes })
        : await userImport.importArray(users.users)
      await record(actor, 'users_imported', null, {
        format: users.format,
        imported: summary.imported,
        skipped: summary.skipped_count,
        skipped_lines: summary.skipped.slice(0, AUDITED_SKIPPED_LINES),
        skipped_truncated: summary.skipped_count > AUDITED_SKIPPED_LINES
      })
      return summary
    },

    events: (search) => store.searchSecurityEvents(search)
  }
}

import type { SecurityEventWrite } from './events.js'
import type { OutgoingWebhook, WebhookOf } from './webhooks.js'

export interface UserRecord {
  id: number
  firstName: string
  lastName: string
  /** Null for users registered through the header variant, which has no username. */
  username: string | null
  /** Stored trimmed and lower-cased. */
  email: string
  /** Null for an account made by signing in with an OpenID provider: a password login then fails as a wrong password does. */
  passwordHash: string | null
  /** False until a link mailed to the current email is followed; a changed email is unverified again. */
  emailVerified: boolean
  emailVerifiedAt: Date | null
  createdAt: Date
  updatedAt: Date
  role: UserRole
  /** Set while an operator has disabled the account (no login, refresh or provider sign-in). */
  disabledAt: Date | null
  /** The start of the latest session of a login (not an app's grant). */
  lastLoginAt: Date | null
}

export const USER_ROLES = ['user', 'admin'] as const
export type UserRole = typeof USER_ROLES[number]

/** A page of the admin listing: `query` matches email, names and username, ignoring case; in id order after `afterId`. */
export interface UserSearch {
  query?: string
  limit: number
  afterId?: number
}

export type NewUser = Pick<UserRecord, 'firstName' | 'lastName' | 'username' | 'email' | 'passwordHash'>

/** The audit row of a change, built from what the change wrote (a new user's id); undefined writes none. */
export type AuditOf<Written> = (written: Written) => SecurityEventWrite | undefined

export type UserChanges = Partial<Pick<UserRecord, 'firstName' | 'lastName' | 'username' | 'email' | 'passwordHash' | 'emailVerified' | 'emailVerifiedAt'>>

/** A user brought by an import (core/accounts/import.ts): its password hash may be another system's (or none). */
export type ImportedUser = NewUser & Pick<UserRecord, 'emailVerified'>

/** What became of one imported user: written, or not because its email or (case-insensitively) its username was taken. */
export type ImportOutcome = 'imported' | 'email_taken' | 'username_taken'

/** The users: their rows, found by id or email, changed one field set at a time. */
export interface UsersStore {
  /**
   * Throws DuplicateValueError when the email or (case-insensitively) the username is taken. `webhook`'s
   * event (user.created) is written to the outbox, and `audit`'s row (an admin's role_changed) to the security
   * events, in the same transaction. The role is 'user' unless given.
   */
  createUser (user: NewUser & { role?: UserRole }, webhook?: WebhookOf<UserRecord>, audit?: AuditOf<UserRecord>): Promise<UserRecord>
  /**
   * Writes a batch of imported users in one transaction, each unless its email or username is taken (by a
   * user before, or one earlier in the batch); answers each one's outcome, in the batch's order. Never throws
   * DuplicateValueError: a taken value skips its row only.
   */
  importUsers (users: ImportedUser[], now: Date): Promise<ImportOutcome[]>
  findUserById (id: number): Promise<UserRecord | undefined>
  findUserByEmail (email: string): Promise<UserRecord | undefined>
  /** Returns the updated user, undefined when it does not exist; throws DuplicateValueError. `webhook`'s event is written in the same transaction. */
  updateUser (id: number, changes: UserChanges, webhook?: WebhookOf<UserRecord>): Promise<UserRecord | undefined>
  /**
   * Deletes the user and, with it, every refresh token and security event of theirs, but the events an
   * admin acted in (actor_id set): those stay, with user_id null (the admin API's audit trail; their
   * detail names the user). False when there was no such user (and `webhook` is not written); otherwise
   * `webhook` (user.deleted) is written to the outbox in the same transaction.
   */
  deleteUser (id: number, webhook?: OutgoingWebhook): Promise<boolean>
  /** Users in id order, `limit` at a time, starting after `afterId` (keyset pagination for admin listings). */
  listUsers (page: { limit: number, afterId?: number }): Promise<UserRecord[]>
  /** Users matching the search, in id order (keyset pagination: the last id is the next page's afterId). */
  searchUsers (search: UserSearch): Promise<UserRecord[]>
  /**
   * Sets the role, and writes `audit` (role_changed) and the webhook of the user as changed (user.updated) in the
   * same transaction; false when there is no such user (nothing written).
   */
  setUserRole (userId: number, role: UserRole, now: Date, audit?: SecurityEventWrite, webhook?: WebhookOf<UserRecord>): Promise<boolean>
  /** How many admins are enabled (role admin, not disabled): the last one may not disable or demote itself. */
  countActiveAdmins (): Promise<number>
  /**
   * Disables the account and, in the same transaction, revokes every session of the user (with its
   * revocation-log rows, as revokeUserSessions does) and voids its pending MFA challenges. A disabled
   * account keeps its first disabled_at. Returns the sessions revoked, undefined when there is no such user.
   */
  disableUser (userId: number, now: Date): Promise<number | undefined>
  /** Clears disabled_at; false when there is no such user. */
  enableUser (userId: number, now: Date): Promise<boolean>
  /** Replaces the password hash (null: no password login); false when there is no such user. */
  setPasswordHash (userId: number, passwordHash: string | null, now: Date): Promise<boolean>
}

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
}

export type NewUser = Pick<UserRecord, 'firstName' | 'lastName' | 'username' | 'email' | 'passwordHash'>

export type UserChanges = Partial<Pick<UserRecord, 'firstName' | 'lastName' | 'username' | 'email' | 'passwordHash' | 'emailVerified' | 'emailVerifiedAt'>>

/** A user brought by an import (core/accounts/import.ts): its password hash may be another system's (or none). */
export type ImportedUser = NewUser & Pick<UserRecord, 'emailVerified'>

/** What became of one imported user: written, or not because its email or (case-insensitively) its username was taken. */
export type ImportOutcome = 'imported' | 'email_taken' | 'username_taken'

/** The users: their rows, found by id or email, changed one field set at a time. */
export interface UsersStore {
  /** Throws DuplicateValueError when the email or (case-insensitively) the username is taken. */
  createUser (user: NewUser): Promise<UserRecord>
  /**
   * Writes a batch of imported users in one transaction, each unless its email or username is taken (by a
   * user before, or one earlier in the batch); answers each one's outcome, in the batch's order. Never throws
   * DuplicateValueError: a taken value skips its row only.
   */
  importUsers (users: ImportedUser[], now: Date): Promise<ImportOutcome[]>
  findUserById (id: number): Promise<UserRecord | undefined>
  findUserByEmail (email: string): Promise<UserRecord | undefined>
  /** Returns the updated user, undefined when it does not exist; throws DuplicateValueError. */
  updateUser (id: number, changes: UserChanges): Promise<UserRecord | undefined>
  /** Deletes the user and, with it, every refresh token of theirs. False when there was no such user. */
  deleteUser (id: number): Promise<boolean>
  /** Users in id order, `limit` at a time, starting after `afterId` (keyset pagination for admin listings). */
  listUsers (page: { limit: number, afterId?: number }): Promise<UserRecord[]>
  /** Replaces the password hash (null: no password login); false when there is no such user. */
  setPasswordHash (userId: number, passwordHash: string | null, now: Date): Promise<boolean>
  /** Marks the email verified, only while the user's email is still `email` (a link mailed to an old address verifies nothing). */
  markEmailVerified (userId: number, email: string, now: Date): Promise<boolean>
}

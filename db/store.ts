/*
 * The account store: what the routes know of persistence. Each backend
 * (db/sqlite, db/postgres) implements this interface in its own
 * folder; every method is async so that a networked backend fits.
 */

export interface UserRecord {
  id: number
  firstName: string
  lastName: string
  /** Null for users registered through the header variant, which has no username. */
  username: string | null
  /** Stored trimmed and lower-cased. */
  email: string
  passwordHash: string
  /** False until a link mailed to the current email is followed; a changed email is unverified again. */
  emailVerified: boolean
  emailVerifiedAt: Date | null
  createdAt: Date
  updatedAt: Date
}

export type NewUser = Pick<UserRecord, 'firstName' | 'lastName' | 'username' | 'email' | 'passwordHash'>
export type UserChanges = Partial<Pick<UserRecord, 'firstName' | 'lastName' | 'username' | 'email' | 'passwordHash' | 'emailVerified' | 'emailVerifiedAt'>>

/** One refresh token of a session. Sessions are token families: rotation adds a row to the family. */
export interface RefreshTokenRecord {
  /** SHA-256 of the token; the token itself is never stored. */
  tokenHash: string
  userId: number
  /** The session id: shared by every token that rotation descends from one login. */
  familyId: string
  createdAt: Date
  expiresAt: Date
  /** When this token was exchanged for its successor; null while it is the live one. */
  rotatedAt: Date | null
  replacedBy: string | null
  /** When the whole family was revoked (logout, reuse detected). */
  revokedAt: Date | null
}

export type NewRefreshToken = Pick<RefreshTokenRecord, 'tokenHash' | 'userId' | 'familyId' | 'expiresAt'>

/** What GET /auth/sessions shows of a session; `id` is the refresh-token family id (the `sid` claim). */
export interface SessionRecord {
  id: string
  userId: number
  createdAt: Date
  lastUsedAt: Date
  userAgent: string | null
  ip: string | null
}

export type NewSession = Pick<SessionRecord, 'id' | 'userId' | 'userAgent' | 'ip'>

/** Whether a session's access tokens are still honoured: revocation lives on its refresh tokens. */
export type SessionState = 'live' | 'revoked' | 'unknown'

export type OneTimeTokenPurpose = 'reset_password' | 'verify_email'

/** A password-reset or email-verification token, stored only as its SHA-256 hash. */
export interface OneTimeTokenRecord {
  tokenHash: string
  userId: number
  purpose: OneTimeTokenPurpose
  /** The address the link was mailed to. */
  email: string
  createdAt: Date
  expiresAt: Date
  /** When it was used, or voided by a newer token of the same purpose. */
  usedAt: Date | null
}

export type NewOneTimeToken = Pick<OneTimeTokenRecord, 'tokenHash' | 'userId' | 'purpose' | 'email' | 'expiresAt'>

export interface SigningKeyRecord {
  kid: string
  algorithm: 'EdDSA' | 'ES256'
  publicKeyPem: string
  privateKeyPem: string
  createdAt: Date
}

export interface AccountStore {
  /** Throws DuplicateValueError when the email or (case-insensitively) the username is taken. */
  createUser (user: NewUser): Promise<UserRecord>
  findUserById (id: number): Promise<UserRecord | undefined>
  findUserByEmail (email: string): Promise<UserRecord | undefined>
  /** Returns the updated user, undefined when it does not exist; throws DuplicateValueError. */
  updateUser (id: number, changes: UserChanges): Promise<UserRecord | undefined>
  /** Deletes the user and, with it, every refresh token of theirs. False when there was no such user. */
  deleteUser (id: number): Promise<boolean>
  /** Users in id order, `limit` at a time, starting after `afterId` (keyset pagination for admin listings). */
  listUsers (page: { limit: number, afterId?: number }): Promise<UserRecord[]>

  /** A user's refresh tokens are deleted with the user, so a token found always has its user. */
  createRefreshToken (token: NewRefreshToken): Promise<void>
  findRefreshToken (tokenHash: string): Promise<RefreshTokenRecord | undefined>
  /**
   * Atomically marks `previousHash` as rotated and stores its successor, only if
   * `previousHash` is still live (not rotated, not revoked). Returns false, writing
   * nothing, when another request rotated or revoked it first.
   */
  rotateRefreshToken (previousHash: string, successor: NewRefreshToken, now: Date): Promise<boolean>
  /** Revokes every token of a session; revoking a revoked session changes nothing. */
  revokeFamily (familyId: string, now: Date): Promise<void>
  /**
   * Revokes every session of a user (logout everywhere, email or password change),
   * except `exceptFamilyId` when given (the session that asked). Returns how many sessions were revoked.
   */
  revokeUserSessions (userId: number, now: Date, options?: { exceptFamilyId?: string }): Promise<number>
  /**
   * Deletes up to `limit` refresh tokens that are expired at `now` or revoked, and returns how
   * many it deleted (background pruning calls it again while it returns `limit`). Rotated
   * tokens that are neither stay: reuse detection needs them. Session rows left without any
   * token (older than a minute) go too.
   */
  pruneRefreshTokens (now: Date, limit: number): Promise<number>

  /** Replaces the password hash; false when there is no such user. */
  setPasswordHash (userId: number, passwordHash: string, now: Date): Promise<boolean>
  /** Marks the email verified, only while the user's email is still `email` (a link mailed to an old address verifies nothing). */
  markEmailVerified (userId: number, email: string, now: Date): Promise<boolean>

  /** Records a new session at login. */
  createSession (session: NewSession, now: Date): Promise<void>
  /** Sets last_used_at (at refresh). */
  touchSession (id: string, now: Date): Promise<void>
  findSession (id: string): Promise<SessionRecord | undefined>
  /** The user's sessions that still have a refresh token neither revoked nor expired, newest first. */
  listLiveSessions (userId: number, now: Date): Promise<SessionRecord[]>
  /**
   * 'live' while the family has a refresh token neither revoked nor expired; 'revoked' when it has
   * tokens but none live; 'unknown' when it has none (its user was deleted, tokens and all).
   */
  sessionState (familyId: string, now: Date): Promise<SessionState>

  /** Stores a one-time token and voids (marks used) the user's unused tokens of the same purpose, in one transaction. */
  issueOneTimeToken (token: NewOneTimeToken, now: Date): Promise<void>
  findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined>
  /** Marks the token used, only if it is unused: true for the one caller that gets to use it. */
  useOneTimeToken (tokenHash: string, now: Date): Promise<boolean>

  listSigningKeys (): Promise<SigningKeyRecord[]>
  /** Stores a key; when `onlyIfNone`, only if the store has no key yet (first start of several instances). */
  addSigningKey (key: SigningKeyRecord, options?: { onlyIfNone?: boolean }): Promise<void>

  /** Resolves when the store answers and its schema has every migration applied; throws StoreUnavailableError otherwise (GET /ready). */
  ping (): Promise<void>

  close (): Promise<void>
}

/** A unique value (email or username) is already held by another user. */
export class DuplicateValueError extends Error {
  constructor (readonly field: 'email' | 'username') {
    super(`${field} already taken`)
    this.name = 'DuplicateValueError'
  }
}

/** The store cannot answer now (locked, busy, read-only, full, unreachable); the request may be retried. */
export class StoreUnavailableError extends Error {
  constructor (options: { cause: unknown }) {
    super('account store unavailable', options)
    this.name = 'StoreUnavailableError'
  }
}

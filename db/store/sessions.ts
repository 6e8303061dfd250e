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
  /** The session's index in the Token Status List; null for a session without one. */
  statusIndex: number | null
}

/** A refresh token as found for a refresh: with the login time of its session, which bounds its life (SESSION_MAX_AGE). */
export interface FoundRefreshToken extends RefreshTokenRecord {
  /** Null only for a token whose session row is missing (none is made without one). */
  sessionStartedAt: Date | null
  /** When the token's user was disabled, read with the token (a refresh then answers 403 ACCOUNT_DISABLED); null while enabled. */
  userDisabledAt: Date | null
  /** The session's active organisation (setActiveOrganisation), read with the token; null when none. */
  activeOrgId: number | null
  /** The user's membership of it as it stands (its slug and role), read in the same query; null when none holds. */
  activeMembership: ActiveMembership | null
}

/** What the `org` claim says of the session's active organisation: its slug and the user's role in it now. */
export interface ActiveMembership {
  slug: string
  role: string
}

export type NewRefreshToken = Pick<RefreshTokenRecord, 'tokenHash' | 'userId' | 'familyId' | 'expiresAt'>

/** A rotation asked of the store: the token presented (by hash), its successor's hash, and the rules it must meet. */
export interface Rotation {
  previousHash: string
  successorHash: string
  now: Date
  /** REFRESH_TOKEN_TTL: the successor expires this long after `now`, or at the session's end if sooner. */
  refreshTokenTtlMs: number
  /** SESSION_MAX_AGE: a session older than this (from its start, its login) is not refreshed. */
  sessionMaxAgeMs: number
  /** Rotate only a token of this user (a password change renews the caller's own session). */
  expectedUserId?: number
}

/** What a rotation gives back: the session and user of the token, its status-list index, and its successor's expiry. */
export interface RotatedToken {
  userId: number
  familyId: string
  statusIndex: number | null
  /** When the successor expires: REFRESH_TOKEN_TTL from now, never past the session's end. */
  expiresAt: Date
  /** The session's active organisation (setActiveOrganisation), read in the same statement; null when none. */
  activeOrgId: number | null
  /** The user's membership of it as it stands, read in the same statement; null when none holds. */
  activeMembership: ActiveMembership | null
}

/** What GET /auth/sessions shows of a session; `id` is the refresh-token family id (the `sid` claim). */
export interface SessionRecord {
  id: string
  userId: number
  createdAt: Date
  lastUsedAt: Date
  userAgent: string | null
  ip: string | null
  /** When the user last proved the password in this session (login, re-authentication); a refresh does not renew it. */
  authenticatedAt: Date
  /**
   * How the user proved itself in this session (core/sessions/authentication-methods.ts), space-separated: the
   * sign-in's methods and every re-authentication's since; a refresh changes nothing.
   */
  amr: string
  /** The organisation made active in this session (POST /orgs/:orgId/activate); null when none. */
  activeOrgId: number | null
}

/**
 * `authenticatedAt` defaults to the session's start (a login). `login` (default true): the session
 * starts with a login, so startSession sets the user's last_login_at; an app's grant session passes false.
 */
export type NewSession = Pick<SessionRecord, 'id' | 'userId' | 'userAgent' | 'ip'> & { authenticatedAt?: Date, amr?: string, login?: boolean }

/** Whether a session's access tokens are still honoured: revocation lives on its refresh tokens. */
export type SessionState = 'live' | 'revoked' | 'unknown'

/**
 * One row of the revocation log: a session revoked (logout, password change, reuse, deleted user, CLI),
 * or a user changed (sessionId null): what GET /users/:id shows of it changed, or it was deleted.
 */
export interface RevocationRecord {
  /** Increases with every row; instances follow the log by it. */
  seq: number
  /** Null in a user-change row, which the database writes itself (a trigger on users). */
  sessionId: string | null
  userId: number
  statusIndex: number | null
  /** The session ended with its user's deletion. */
  userDeleted: boolean
  revokedAt: Date
}

/** Sessions and their refresh tokens (token families), the revocation log every instance follows, and the status-list indexes. */
export interface SessionsStore {
  /** A user's refresh tokens are deleted with the user, so a token found always has its user. */
  createRefreshToken (token: NewRefreshToken): Promise<void>
  findRefreshToken (tokenHash: string): Promise<FoundRefreshToken | undefined>
  /**
   * A rotation as one statement (UPDATE … RETURNING): marks `previousHash` rotated and stores its
   * successor, only if the token is live (not rotated, revoked or expired), its session within
   * SESSION_MAX_AGE of its start, its user not disabled, and (with expectedUserId) that user's.
   * Returns what the new access token and cookie need; undefined, writing nothing, otherwise: the
   * caller reads the token (findRefreshToken) to tell why, or that another request rotated it first.
   */
  rotateRefreshToken (rotation: Rotation): Promise<RotatedToken | undefined>
  /** Revokes every token of a session; revoking a revoked session changes nothing. */
  revokeFamily (familyId: string, now: Date): Promise<void>
  /**
   * Revokes every session of a user (logout everywhere, email or password change, reset),
   * except `exceptFamilyId` when given (the session that asked), and, in the same transaction,
   * voids the user's pending MFA challenges (voidMfaChallenges): a login waiting for its second
   * step is a session to be, and ends with the others. Returns how many sessions were revoked.
   */
  revokeUserSessions (userId: number, now: Date, options?: { exceptFamilyId?: string }): Promise<number>
  /**
   * Deletes up to `limit` refresh tokens that are expired at `now` or revoked, and returns how
   * many it deleted (background pruning calls it again while it returns `limit`). Rotated
   * tokens that are neither stay: reuse detection needs them. Session rows left without any
   * token (older than a minute) go too.
   */
  pruneRefreshTokens (now: Date, limit: number): Promise<number>
  /** Records a new session at login. */
  createSession (session: NewSession, now: Date): Promise<void>
  /**
   * A login's two rows in one transaction: the session and its first refresh token. A crash between two
   * separate inserts would leave a session whose token never existed; here it is both or neither. The
   * same transaction sets the user's last_login_at unless `session.login` is false.
   */
  startSession (session: NewSession, token: NewRefreshToken, now: Date): Promise<void>
  /**
   * Sets (an organisation's id) or clears (null) the session's active organisation: POST /orgs/:orgId/activate,
   * POST /orgs/deactivate, and a refresh that finds the membership gone. Unknown sessions change nothing.
   */
  setActiveOrganisation (sessionId: string, orgId: number | null): Promise<void>
  /** Sets last_used_at (at refresh). */
  touchSession (id: string, now: Date): Promise<void>
  /** Sets authenticated_at (the user proved itself again in this session: re-authentication) and, when given, amr. */
  markSessionAuthenticated (id: string, now: Date, amr?: string): Promise<void>
  findSession (id: string): Promise<SessionRecord | undefined>
  /** The user's sessions that still have a refresh token neither revoked nor expired, newest first. */
  listLiveSessions (userId: number, now: Date): Promise<SessionRecord[]>
  /**
   * 'live' while the family has a refresh token neither revoked nor expired; 'revoked' when it has
   * tokens but none live; 'unknown' when it has none (its user was deleted, tokens and all).
   */
  sessionState (familyId: string, now: Date): Promise<SessionState>
  /**
   * Gives the session the Token Status List index `statusIndex` (core/revocations/status-list.ts draws
   * it at random). False, writing nothing, when the index is taken: by a live session, or by a revoked
   * one still in the revocation log (its bit is still set in the lists). Race-safe: of two sessions
   * claiming one index, one gets it.
   */
  claimStatusIndex (sessionId: string, statusIndex: number): Promise<boolean>
  /**
   * Writes a revocation-log row for a status index that no session holds (a client-credentials token's,
   * core/oauth/client-token-status.ts): every instance sets its bit in the status list. `sessionId` names
   * the token in the log; its user_id is 0 (no user stands behind such a token).
   */
  revokeStatusIndex (sessionId: string, statusIndex: number, now: Date): Promise<void>
  /** The highest status index a session holds, null when none does: how many lists are in use. */
  highestStatusIndex (): Promise<number | null>
  /**
   * The revocation log after `afterSeq`, revoked at or after `since`, in seq order, at most `limit` rows.
   * revokeFamily, revokeUserSessions and deleteUser write it in their own transaction.
   */
  readRevocations (afterSeq: number, since: Date, limit: number): Promise<RevocationRecord[]>
  /** Deletes the log rows revoked before `before` (their access tokens have expired); returns how many. */
  pruneRevocations (before: Date): Promise<number>
}

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
  /** When the user last proved the password in this session (login, re-authentication); a refresh does not renew it. */
  authenticatedAt: Date
}

/** `authenticatedAt` defaults to the session's start (a login). */
export type NewSession = Pick<SessionRecord, 'id' | 'userId' | 'userAgent' | 'ip'> & { authenticatedAt?: Date }

/** Whether a session's access tokens are still honoured: revocation lives on its refresh tokens. */
export type SessionState = 'live' | 'revoked' | 'unknown'

/** oidc_login: the one-time `#code=` of a header-variant sign-in with a provider (POST /auth/oidc/exchange). */
export type OneTimeTokenPurpose = 'reset_password' | 'verify_email' | 'oidc_login'

/** A password-reset or email-verification token, stored only as its SHA-256 hash. */
export interface OneTimeTokenRecord {
  tokenHash: string
  userId: number
  purpose: OneTimeTokenPurpose
  /** The address the link was mailed to. */
  email: string
  createdAt: Date
  expiresAt: Date
  /** When it was used, or voided (a sibling was used, too many newer ones, a password or email change). */
  usedAt: Date | null
}

/** One security event of an account (login, failure, lockout, change); see src/security-events.ts for the types. */
export interface SecurityEventRecord {
  id: number
  type: string
  /** Null for a failed login of an email that has no account. */
  userId: number | null
  sessionId: string | null
  ip: string | null
  userAgent: string | null
  requestId: string | null
  /** What else the event tells (a login's method, the previous email address). */
  detail: Record<string, unknown> | null
  createdAt: Date
}

export type NewSecurityEvent = Omit<SecurityEventRecord, 'id'>

/** At most `max` tokens of a purpose issued to a user since `since`. */
export interface OneTimeTokenQuota {
  since: Date
  max: number
}

export type NewOneTimeToken = Pick<OneTimeTokenRecord, 'tokenHash' | 'userId' | 'purpose' | 'email' | 'expiresAt'>

/** A mail as the service writes it to the outbox (plain text). */
export interface MailMessage {
  to: string
  subject: string
  text: string
}

/** A mail a worker claimed from the outbox for one delivery attempt. */
export interface ClaimedMail extends MailMessage {
  id: number
  /** Attempts so far, this one included. */
  attempts: number
}

/** One row of the revocation log: a session revoked (logout, password change, reuse, deleted user, CLI). */
export interface RevocationRecord {
  /** Increases with every row; instances follow the log by it. */
  seq: number
  sessionId: string
  userId: number
  statusIndex: number | null
  /** The session ended with its user's deletion. */
  userDeleted: boolean
  revokedAt: Date
}

/** An account at an OpenID Connect provider linked to a user: the provider's `sub` is the identity. */
export interface IdentityRecord {
  /** The provider's name in OIDC_PROVIDERS. */
  provider: string
  subject: string
  userId: number
  /** The email the provider gave at linking (not kept in step with it). */
  email: string | null
  createdAt: Date
}

export type NewIdentity = Omit<IdentityRecord, 'createdAt'>

/** What unlinking an identity did: nothing to unlink, or refused because it is the last way to sign in. */
export type UnlinkOutcome = 'unlinked' | 'not_found' | 'last_login_method'

export interface SigningKeyRecord {
  kid: string
  algorithm: 'EdDSA' | 'ES256'
  publicKeyPem: string
  /** Null once the key is retired: only the newest key signs, older ones only verify. */
  privateKeyPem: string | null
  createdAt: Date
}

/** A passkey (WebAuthn credential) of a user. */
export interface PasskeyRecord {
  /** Ours: what the API shows and takes (a UUID). */
  id: string
  userId: number
  /** The authenticator's credential id, base64url. */
  credentialId: string
  /** The COSE public key, base64url. */
  publicKey: string
  /** The signature counter last seen; 0 for authenticators that keep none. */
  counter: number
  /** Transport hints (internal, hybrid, usb, ...), as the browser reported them. */
  transports: string[]
  name: string
  createdAt: Date
  lastUsedAt: Date | null
}

export type NewPasskey = Omit<PasskeyRecord, 'createdAt' | 'lastUsedAt'>

export type WebauthnChallengePurpose = 'registration' | 'authentication'

/** A WebAuthn challenge handed out and not yet answered, stored only as its SHA-256 hash. */
export interface NewWebauthnChallenge {
  challengeHash: string
  purpose: WebauthnChallengePurpose
  /** The user a registration challenge was issued to; null for a login challenge. */
  userId: number | null
  expiresAt: Date
}

/** A user's TOTP secret as stored, and its state. */
export interface TotpRecord {
  userId: number
  /** The base32 secret, or its sealed form (with SIGNING_KEY_ENCRYPTION_KEY). */
  secret: string
  createdAt: Date
  /** Null until a code confirmed it: only a confirmed secret asks logins for a second step. */
  confirmedAt: Date | null
  /** The time step of the last code accepted; a code of this step or an older one is refused (replay). */
  lastUsedStep: number | null
  /** Wrong codes (TOTP or recovery) since the last accepted one, over every mfa_token: the account's cap counts these. */
  failedCodes: number
}

/** The second step of a login of an account with TOTP: the mfa_token, stored only as its SHA-256 hash. */
export interface MfaChallengeRecord {
  tokenHash: string
  userId: number
  createdAt: Date
  expiresAt: Date
  /** Wrong codes tried with it; at the limit it is void. */
  failures: number
  usedAt: Date | null
}

export type NewMfaChallenge = Pick<MfaChallengeRecord, 'tokenHash' | 'userId' | 'expiresAt'>

/** What a code proved, for the store to consume: a TOTP time step, or a recovery code (its hash). */
export type MfaProof = { totpStep: number } | { recoveryCodeHash: string }

/**
 * How one code tried against a challenge ended. 'locked': the account's second factor reached its cap of
 * wrong codes and judged nothing. A refusal that reached the cap has `lockedNow`.
 */
export type MfaAttempt =
  | { outcome: 'invalid' }
  | { outcome: 'passed', userId: number }
  | { outcome: 'refused', userId: number, failures: number, lockedNow?: true }
  | { outcome: 'locked', userId: number }

/** The account-wide cap on wrong second-factor codes, and the mail to its owner written to the outbox when a wrong code reaches it. */
export interface MfaWrongCodeCap {
  maxWrongCodes: number
  lockedMail?: MailMessage
}

/**
 * Someone proved they own a user's address: a verified provider sign-in (with the identity to link),
 * a password reset (with the new password), or the mailed verification link.
 */
export interface AddressProof {
  userId: number
  /** The address proved: nothing is claimed or verified once the user's email is another. */
  email: string
  /** A reset: the new password, stored whatever the address's state, with every one-time token voided and every session ended. */
  passwordHash?: string
  /** A provider sign-in: the identity to link, refused (writing nothing) when the user has another at that provider. */
  identity?: Omit<NewIdentity, 'userId'>
}

/** What a claim of a never-verified account removed (for the security events). */
export interface ClaimedSetup {
  /** The password was cleared (a provider sign-in; a reset replaces it instead). */
  passwordCleared: boolean
  passkeys: Array<Pick<PasskeyRecord, 'id' | 'name'>>
  /** A TOTP secret (confirmed or not), with its recovery codes and pending mfa_tokens. */
  totp: boolean
  /** Providers of the identities removed. */
  identities: string[]
}

export type AddressProofOutcome =
  /** The user has another identity at the provider, or (provider, subject) is another user's: nothing was written. */
  | { outcome: 'identity_conflict' }
  /** The user is gone, or its email is no longer the one proved: nothing was verified or claimed (a reset's password was still stored). */
  | { outcome: 'email_changed', sessionsEnded: number }
  /**
   * The address is verified (and the identity linked). `claimed` is set when it had never been: everything
   * set up before the proof is gone (see proveAddress).
   */
  | { outcome: 'proved', claimed?: ClaimedSetup, sessionsEnded: number }

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
  findRefreshToken (tokenHash: string): Promise<FoundRefreshToken | undefined>
  /**
   * Atomically marks `previousHash` as rotated and stores its successor, only if
   * `previousHash` is still live (not rotated, not revoked). Returns false, writing
   * nothing, when another request rotated or revoked it first.
   */
  rotateRefreshToken (previousHash: string, successor: NewRefreshToken, now: Date): Promise<boolean>
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

  /** Replaces the password hash (null: no password login); false when there is no such user. */
  setPasswordHash (userId: number, passwordHash: string | null, now: Date): Promise<boolean>

  findIdentity (provider: string, subject: string): Promise<IdentityRecord | undefined>
  /** The user's identities, oldest first. */
  listIdentities (userId: number): Promise<IdentityRecord[]>
  /**
   * A new user and its identity in one transaction. Throws DuplicateValueError (email, username), or
   * IdentityTakenError when another request linked the same (provider, subject) first.
   */
  createUserWithIdentity (user: NewUser, identity: Omit<NewIdentity, 'userId'>, now: Date): Promise<UserRecord>
  /** Links an identity; false, writing nothing, when (provider, subject) is linked already or the user has one at that provider. */
  linkIdentity (identity: NewIdentity, now: Date): Promise<boolean>
  /**
   * Removes the user's identity at the provider unless it is the last way to sign in (no password and
   * no other identity), judged in the same transaction so two unlinks racing cannot both pass.
   * (Passkeys, once stored, count here too.)
   */
  unlinkIdentity (userId: number, provider: string): Promise<UnlinkOutcome>
  /**
   * The owner of the address proved it, in one transaction. When the user's email is `email` and was never
   * verified, whoever registered it may not own it, so the account is claimed: its passkeys, TOTP secret,
   * recovery codes, pending mfa challenges, passkey-registration challenges and identities are deleted, its
   * unused one-time tokens voided and its sessions revoked (the revocation log written); a provider sign-in
   * also clears the password (a reset stores the new one; the verification link keeps it). The email is then
   * verified and the identity linked. An account already verified keeps all of it (a reset never turns a second
   * factor off). A reset always stores its password, voids one-time tokens and revokes every session. The
   * identity check comes before any write: on `identity_conflict` nothing changed.
   */
  proveAddress (proof: AddressProof, now: Date): Promise<AddressProofOutcome>
  /** Marks the email verified, only while the user's email is still `email` (a link mailed to an old address verifies nothing). */
  markEmailVerified (userId: number, email: string, now: Date): Promise<boolean>

  /** Records a new session at login. */
  createSession (session: NewSession, now: Date): Promise<void>
  /**
   * A login's two rows in one transaction: the session and its first refresh token. A crash between two
   * separate inserts would leave a session whose token never existed; here it is both or neither.
   */
  startSession (session: NewSession, token: NewRefreshToken, now: Date): Promise<void>
  /**
   * A password change, in one transaction: the new hash, every mailed one-time token void, every other
   * session of the user revoked (with its revocation-log row, and the user's pending MFA challenges
   * voided, as revokeUserSessions does), and `keepSessionId` marked as just authenticated. A crash can
   * no longer leave the old sessions alive beside the new password. Returns how many sessions ended.
   */
  changePassword (userId: number, passwordHash: string, now: Date, keepSessionId: string): Promise<number>
  /**
   * An email change, in one transaction: the user's fields updated (the address unverified again), every
   * mailed one-time token void, `notice` (the warning to the old address) queued in the outbox, and every
   * session of the user revoked as revokeUserSessions does. The user is undefined, and nothing written,
   * when there is no such user; a taken address throws DuplicateValueError.
   */
  changeEmail (userId: number, changes: UserChanges, now: Date, notice: MailMessage): Promise<{ user?: UserRecord, sessionsEnded: number }>
  /** Sets last_used_at (at refresh). */
  touchSession (id: string, now: Date): Promise<void>
  /** Sets authenticated_at: the user proved the password again in this session (re-authentication). */
  markSessionAuthenticated (id: string, now: Date): Promise<void>
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
  /** The highest status index a session holds, null when none does: how many lists are in use. */
  highestStatusIndex (): Promise<number | null>
  /**
   * The revocation log after `afterSeq`, revoked at or after `since`, in seq order, at most `limit` rows.
   * revokeFamily, revokeUserSessions and deleteUser write it in their own transaction.
   */
  readRevocations (afterSeq: number, since: Date, limit: number): Promise<RevocationRecord[]>
  /** Deletes the log rows revoked before `before` (their access tokens have expired); returns how many. */
  pruneRevocations (before: Date): Promise<number>

  /**
   * Stores a one-time token and, in the same transaction, voids the user's unused tokens of the
   * same purpose beyond the newest `liveLimit` (the new one included): a new link does not void
   * the last few already mailed. With `quotas`, stores nothing and answers false when the user was
   * issued `max` tokens of the purpose since `since` (used or not): checked and written in one
   * transaction, so requests racing cannot exceed it. With `mail`, the mail that carries the token's
   * link is written to the outbox in that same transaction: a token is never issued without its mail.
   */
  issueOneTimeToken (token: NewOneTimeToken, now: Date, options: { liveLimit: number, quotas?: OneTimeTokenQuota[], mail?: MailMessage }): Promise<boolean>
  findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined>
  /**
   * Marks the token used, only if it is unused: true for the one caller that gets to use it. The
   * user's other unused tokens of the same purpose are voided with it (using one link voids all).
   */
  useOneTimeToken (tokenHash: string, now: Date): Promise<boolean>
  /** Voids every unused one-time token of the user (a password or email change). */
  voidOneTimeTokens (userId: number, now: Date): Promise<void>

  recordSecurityEvent (event: NewSecurityEvent): Promise<void>
  /** The user's events, newest first, `limit` at a time, older than the event `beforeId` when given. */
  listSecurityEvents (userId: number, page: { limit: number, beforeId?: number }): Promise<SecurityEventRecord[]>
  /** Deletes up to `limit` events created before `olderThan`; returns how many (pruning calls again while it returns `limit`). */
  pruneSecurityEvents (olderThan: Date, limit: number): Promise<number>

  /** Writes a mail to the outbox, due at once. */
  enqueueMail (mail: MailMessage, now: Date): Promise<void>
  /**
   * Claims up to `limit` pending mails due at `now` that no live claim holds, oldest first: each gets
   * the lease `claimedUntil` and one more attempt, atomically, so no other process (or instance) claims
   * it before the lease ends.
   */
  claimMails (now: Date, claimedUntil: Date, limit: number): Promise<ClaimedMail[]>
  /** The mail went out: erases its body and ends its claim. */
  markMailSent (id: number, now: Date): Promise<void>
  /** The attempt failed: the mail is due again at `retryAt`, unclaimed. */
  retryMail (id: number, retryAt: Date, error: string): Promise<void>
  /** The last attempt failed: the mail is given up and its body erased. */
  markMailFailed (id: number, now: Date, error: string): Promise<void>
  /** Mails neither sent nor given up. */
  countPendingMails (): Promise<number>
  /** Deletes up to `limit` mails sent or given up before `finishedBefore`; returns how many (pruning calls again while it returns `limit`). */
  pruneMails (finishedBefore: Date, limit: number): Promise<number>

  listSigningKeys (): Promise<SigningKeyRecord[]>
  /** Stores a key; when `onlyIfNone`, only if the store has no key yet (first start of several instances). */
  addSigningKey (key: SigningKeyRecord, options?: { onlyIfNone?: boolean }): Promise<void>
  /**
   * Rewrites a key's private half (sealing one stored in clear) or deletes it (null: a retired key),
   * only while it is still `expected`: false, writing nothing, when another instance changed it first.
   */
  replaceSigningKeyPrivateHalf (kid: string, expected: string, replacement: string | null): Promise<boolean>

  /** Stores a passkey; false, storing nothing, when its credential id is already stored (for anyone). */
  createPasskey (passkey: NewPasskey, now: Date): Promise<boolean>
  /** The user's passkeys, oldest first (GET /auth/account's `mfa.passkeys` is whether there is any). */
  listPasskeys (userId: number): Promise<PasskeyRecord[]>
  findPasskeyByCredentialId (credentialId: string): Promise<PasskeyRecord | undefined>
  /** Renames one of the user's passkeys; undefined when it is not one of theirs. */
  renamePasskey (userId: number, id: string, name: string): Promise<PasskeyRecord | undefined>
  /** Deletes one of the user's passkeys; false when it is not one of theirs. */
  deletePasskey (userId: number, id: string): Promise<boolean>
  /**
   * Records a login with the passkey: stores the new signature counter and the time, only if the
   * counter grew (or both it and the stored one are 0: an authenticator without a counter). False,
   * writing nothing, when it did not: a counter that goes back (or races a higher one) is refused.
   */
  recordPasskeyUse (id: string, counter: number, now: Date): Promise<boolean>
  /** Stores a challenge; expired challenges are deleted in the same transaction (the table holds minutes of them). */
  createWebauthnChallenge (challenge: NewWebauthnChallenge, now: Date): Promise<void>
  /**
   * Uses a challenge up: deletes it and answers true only when it is stored for `purpose`, not
   * expired at `now`, and (when `userId` is given) was issued to that user. Of two requests with
   * one challenge, one gets true.
   */
  consumeWebauthnChallenge (challengeHash: string, purpose: WebauthnChallengePurpose, now: Date, userId?: number): Promise<boolean>
  /** Stores a new, unconfirmed TOTP secret in place of an unconfirmed one; false, writing nothing, when the user's TOTP is confirmed. */
  saveTotpSecret (userId: number, secret: string, now: Date): Promise<boolean>
  findTotp (userId: number): Promise<TotpRecord | undefined>
  /**
   * Confirms the user's unconfirmed secret, with the time step of the code that matched it (that code is
   * then used), and stores its recovery codes in place of any, in one transaction; false, writing
   * nothing, when no secret waits for confirmation.
   */
  confirmTotp (userId: number, step: number, recoveryCodeHashes: string[], now: Date): Promise<boolean>
  /** Deletes the user's TOTP secret, recovery codes and pending MFA challenges; false when it had no secret. */
  deleteTotp (userId: number): Promise<boolean>
  /** Replaces the recovery codes (the old set is void), only while TOTP is confirmed; false, writing nothing, otherwise. */
  replaceRecoveryCodes (userId: number, codeHashes: string[], now: Date): Promise<boolean>
  /** How many of the user's recovery codes are unused. */
  countRecoveryCodes (userId: number): Promise<number>
  /** Stores a login's MFA challenge; the user's expired, used and void ones (`maxFailures` reached) are deleted with it. */
  createMfaChallenge (challenge: NewMfaChallenge, now: Date, maxFailures: number): Promise<void>
  findMfaChallenge (tokenHash: string): Promise<MfaChallengeRecord | undefined>
  /**
   * Voids every unused MFA challenge of the user (marks it used): an mfa_token handed out before a
   * password change or reset, an email change or a logout everywhere verifies nothing after it.
   */
  voidMfaChallenges (userId: number, now: Date): Promise<void>
  /**
   * One code tried against a challenge, in one transaction. 'invalid': the challenge is unknown, used,
   * expired or has `maxFailures` failures. 'locked': the user's TOTP has `cap.maxWrongCodes` wrong codes
   * since the last accepted one; nothing is judged or consumed. 'passed': `proof` was consumed (a
   * confirmed TOTP's step newer than its last used one, which becomes the last used; or an unused
   * recovery code, now used), the challenge is used and the wrong codes are forgotten. 'refused'
   * otherwise (a null proof: the code matched nothing), with one more failure counted on the challenge
   * and on the account; the one that reaches the cap writes `cap.lockedMail` to the outbox in the same
   * transaction (so it is mailed once). Of parallel attempts with one proof or one challenge, at most
   * one passes; parallel wrong codes never count past the cap.
   */
  attemptMfaChallenge (tokenHash: string, proof: MfaProof | null, now: Date, maxFailures: number, cap: MfaWrongCodeCap): Promise<MfaAttempt>
  /**
   * Lowers the user's count of wrong second-factor codes to at most `keepAtMost` (a password reset lifts
   * the lock this way: the cap minus `keepAtMost` wrong codes more lock it again).
   */
  forgiveMfaFailures (userId: number, keepAtMost: number): Promise<void>

  /** A shared setting the service decided for itself (e.g. the calibrated password-hash parameters), or undefined. */
  readSetting (name: string): Promise<string | undefined>
  /** Stores a setting; when `onlyIfNone`, only if it has no value yet (instances starting together keep the first). */
  writeSetting (name: string, value: string, options?: { onlyIfNone?: boolean }): Promise<void>

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

/** Another request linked the same provider account first (a race of two sign-ins). */
export class IdentityTakenError extends Error {
  constructor () {
    super('identity already linked')
    this.name = 'IdentityTakenError'
  }
}

/**
 * The store cannot answer now (locked, busy, read-only, full, unreachable); the request may be retried.
 * The one error for it: its code and status are what the client gets (503 STORE_UNAVAILABLE, with
 * Retry-After), the cause (the driver's error) only the log.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'STORE_UNAVAILABLE'
  readonly statusCode = 503
  constructor (options: { cause: unknown }) {
    super('The account store is unavailable; retry shortly', options)
    this.name = 'StoreUnavailableError'
  }
}

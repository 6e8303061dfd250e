import type { SecurityEventWrite } from './events.js'
import type { MailMessage } from './outbox.js'

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

/** TOTP secrets, recovery codes and the pending second steps of logins (mfa challenges), with their guess caps. */
export interface SecondFactorsStore {
  /** Stores a new, unconfirmed TOTP secret in place of an unconfirmed one; false, writing nothing, when the user's TOTP is confirmed. */
  saveTotpSecret (userId: number, secret: string, now: Date): Promise<boolean>
  findTotp (userId: number): Promise<TotpRecord | undefined>
  /**
   * Confirms the user's unconfirmed secret, with the time step of the code that matched it (that code is
   * then used), and stores its recovery codes in place of any, in one transaction; false, writing
   * nothing, when no secret waits for confirmation.
   */
  confirmTotp (userId: number, step: number, recoveryCodeHashes: string[], now: Date): Promise<boolean>
  /**
   * Deletes the user's TOTP secret, recovery codes and pending MFA challenges, and writes `audit` (an admin's
   * admin_mfa_reset, with its webhook) in the same transaction; false when it had no secret (`audit` is written all the same).
   */
  deleteTotp (userId: number, audit?: SecurityEventWrite): Promise<boolean>
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
}

import type { MailMessage } from './outbox.js'

/**
 * What a one-time token is for: the one list, which both dialects' schemas store as the column's values.
 * oidc_login: the one-time `#code=` of a header-variant sign-in with a provider (POST /auth/oidc/exchange).
 */
export const ONE_TIME_TOKEN_PURPOSES = ['reset_password', 'verify_email', 'oidc_login'] as const
export type OneTimeTokenPurpose = typeof ONE_TIME_TOKEN_PURPOSES[number]

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

/** At most `max` tokens of a purpose issued to a user since `since`. */
export interface OneTimeTokenQuota {
  since: Date
  max: number
}

export type NewOneTimeToken = Pick<OneTimeTokenRecord, 'tokenHash' | 'userId' | 'purpose' | 'email' | 'expiresAt'>

/** The mailed one-time tokens (password reset, email verification, the provider sign-in code), stored as hashes, single use. */
export interface OneTimeTokensStore {
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
}

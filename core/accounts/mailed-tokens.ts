import type { AccountStore, OneTimeTokenPurpose, OneTimeTokenRecord } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import {
  InvalidCodeError, InvalidResetTokenError, InvalidVerificationTokenError, ResetTokenExpiredError, VerificationTokenExpiredError
} from '../errors.js'
import type { MailMessage, Mailer } from '../mail/mailer.js'
import { hashToken, newRandomToken } from '../tokens/random-token.js'

const HOUR_MS = 3_600_000
/** Reset links that stay live together: asking for another does not void the last ones mailed (a third party could otherwise void the owner's). */
export const LIVE_RESET_LINKS = 3
/** Reset mails one address can be sent, whoever asks (forgot-password still answers 202). */
export const RESET_MAILS_PER_HOUR = 5
export const RESET_MAILS_PER_DAY = 20

const TOKEN_ERRORS = {
  reset_password: { Invalid: InvalidResetTokenError, Expired: ResetTokenExpiredError },
  verify_email: { Invalid: InvalidVerificationTokenError, Expired: VerificationTokenExpiredError },
  // The provider sign-in's #code= (issued by core/identities/identities.ts, exchanged at POST /auth/oidc/exchange): used or expired alike are INVALID_CODE.
  oidc_login: { Invalid: InvalidCodeError, Expired: InvalidCodeError }
} as const

/**
 * The account's mailed one-time tokens (256 random bits, stored as SHA-256 hashes, single use,
 * expiring, voided by a password or email change): a reset or verification link, and its mail.
 */
export interface MailedTokens {
  /** The link a mail carries to the page at `path` (of PUBLIC_URL), with the token in its fragment. */
  linkOf (path: string, token: string): string
  /**
   * A new token of the purpose and, in the same store transaction, the mail that carries its link
   * (written to the outbox): neither without the other. False when a quota refused it.
   */
  issueWithMail (user: { id: number, email: string }, purpose: OneTimeTokenPurpose, mailOf: (token: string) => MailMessage): Promise<boolean>
  /** The stored token, if it may be used now; else the purpose's 400 error (unknown, used, voided or expired). */
  usable (token: string, purpose: OneTimeTokenPurpose, now: Date): Promise<OneTimeTokenRecord>
  /** Marks the token used (and its siblings void), conditional on its being unused: of two requests with one token, one wins. */
  use (record: OneTimeTokenRecord, now: Date): Promise<void>
}

export interface MailedTokensDependencies {
  store: Pick<AccountStore, 'issueOneTimeToken' | 'findOneTimeToken' | 'useOneTimeToken'>
  clock: Clock
  mailer: Pick<Mailer, 'forOutbox'>
}

export interface MailedTokensOptions {
  /** Where the links lead: PUBLIC_URL. */
  publicUrl: string
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
}

export function createMailedTokens ({ store, clock, mailer }: MailedTokensDependencies, options: MailedTokensOptions): MailedTokens {
  const ttlSecondsOf = (purpose: OneTimeTokenPurpose) => purpose === 'reset_password' ? options.passwordResetTtlSeconds : options.emailVerificationTtlSeconds

  return {
    linkOf: (path, token) => `${options.publicUrl}${path}#token=${token}`,

    async issueWithMail (user, purpose, mailOf) {
      const now = currentDate(clock)
      const token = newRandomToken()
      const expiresAt = new Date(now.getTime() + ttlSecondsOf(purpose) * 1000)
      const limits = purpose === 'reset_password'
        ? { liveLimit: LIVE_RESET_LINKS, quotas: [{ since: new Date(now.getTime() - HOUR_MS), max: RESET_MAILS_PER_HOUR }, { since: new Date(now.getTime() - 24 * HOUR_MS), max: RESET_MAILS_PER_DAY }] }
        : { liveLimit: 1 }
      return await store.issueOneTimeToken({ tokenHash: hashToken(token), userId: user.id, purpose, email: user.email, expiresAt }, now, { ...limits, mail: mailer.forOutbox(mailOf(token)) })
    },

    async usable (token, purpose, now) {
      const record = await store.findOneTimeToken(hashToken(token))
      if (record === undefined || record.purpose !== purpose || record.usedAt !== null) throw new TOKEN_ERRORS[purpose].Invalid()
      if (record.expiresAt <= now) throw new TOKEN_ERRORS[purpose].Expired()
      return record
    },

    async use (record, now) {
      if (!await store.useOneTimeToken(record.tokenHash, now)) throw new TOKEN_ERRORS[record.purpose].Invalid()
    }
  }
}

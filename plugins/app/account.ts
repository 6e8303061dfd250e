import fp from 'fastify-plugin'
import type { OneTimeTokenPurpose, OneTimeTokenRecord } from '../../db/store.js'
import {
  InvalidResetTokenError, InvalidVerificationTokenError, ResetTokenExpiredError, VerificationTokenExpiredError
} from '../../src/errors.js'
import { assertPasswordAllowed } from '../../src/password-policy.js'
import { hashOneTimeToken, newOneTimeToken } from '../../src/tokens/one-time-token.js'
import type { MailMessage } from './mailer.js'

declare module 'fastify' {
  interface FastifyInstance {
    account: AccountLifecycle
  }
}

export interface AccountLifecycle {
  /**
   * The one place every new password (change, reset) passes through before it
   * is stored: the password policy (400 PASSWORD_TOO_COMMON) is checked here. Returns the hash to store.
   */
  acceptNewPassword (password: string): Promise<string>
  /** Mails a verification link to the user's address, off the request's path. */
  sendVerificationMail (user: { id: number, email: string }): void
  /** Mails a reset link when the email belongs to a user, and nothing otherwise; all of it off the request's path. */
  sendPasswordResetMail (email: string): void
  /** Sets the password from a mailed token and revokes every session of its user. Returns the user id. */
  resetPassword (token: string, newPassword: string): Promise<number>
  /** Marks the address the token was mailed to as verified. */
  verifyEmail (token: string): Promise<void>
}

export interface AccountOptions {
  publicUrl: string
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
}

const TOKEN_ERRORS = {
  reset_password: { Invalid: InvalidResetTokenError, Expired: ResetTokenExpiredError },
  verify_email: { Invalid: InvalidVerificationTokenError, Expired: VerificationTokenExpiredError }
} as const

/**
 * Password reset and email verification by mailed one-time tokens: 256
 * random bits, stored as SHA-256 hashes, single use, expiring; a new token
 * of a purpose voids the user's older ones.
 */
export default fp<AccountOptions>(async (fastify, options) => {
  const { store, passwords, mailer } = fastify

  async function issueToken (userId: number, email: string, purpose: OneTimeTokenPurpose): Promise<string> {
    const now = new Date()
    const ttlSeconds = purpose === 'reset_password' ? options.passwordResetTtlSeconds : options.emailVerificationTtlSeconds
    const token = newOneTimeToken()
    await store.issueOneTimeToken({ tokenHash: hashOneTimeToken(token), userId, purpose, email, expiresAt: new Date(now.getTime() + ttlSeconds * 1000) }, now)
    return token
  }

  /** The stored token, if it may be used now; else the purpose's 400 error (unknown, used, voided or expired). */
  async function usableToken (token: string, purpose: OneTimeTokenPurpose, now: Date): Promise<OneTimeTokenRecord> {
    const record = await store.findOneTimeToken(hashOneTimeToken(token))
    if (record === undefined || record.purpose !== purpose || record.usedAt !== null) throw new TOKEN_ERRORS[purpose].Invalid()
    if (record.expiresAt <= now) throw new TOKEN_ERRORS[purpose].Expired()
    return record
  }

  /** Marks the token used, conditional on its being unused: of two requests with one token, one wins. */
  async function useToken (record: OneTimeTokenRecord, now: Date): Promise<void> {
    if (!await store.useOneTimeToken(record.tokenHash, now)) throw new TOKEN_ERRORS[record.purpose].Invalid()
  }

  const account: AccountLifecycle = {
    async acceptNewPassword (password) {
      assertPasswordAllowed(password)
      return await passwords.hash(password)
    },

    sendVerificationMail (user) {
      mailer.send(async (): Promise<MailMessage> => {
        const token = await issueToken(user.id, user.email, 'verify_email')
        return verificationMail(user.email, `${options.publicUrl}/verify-email?token=${token}`, options.emailVerificationTtlSeconds)
      })
    },

    sendPasswordResetMail (email) {
      mailer.send(async (): Promise<MailMessage | undefined> => {
        const user = await store.findUserByEmail(email)
        if (user === undefined) return undefined
        const token = await issueToken(user.id, user.email, 'reset_password')
        return resetMail(user.email, `${options.publicUrl}/reset-password?token=${token}`, options.passwordResetTtlSeconds)
      })
    },

    async resetPassword (token, newPassword) {
      const now = new Date()
      const record = await usableToken(token, 'reset_password', now)
      // Before the token is used: a password the policy refuses must not burn the link.
      const passwordHash = await account.acceptNewPassword(newPassword)
      await useToken(record, now)
      await store.setPasswordHash(record.userId, passwordHash, now)
      await store.revokeUserSessions(record.userId, now)
      // The link reached the inbox: that proves the address too, if it is still the user's.
      await store.markEmailVerified(record.userId, record.email, now)
      return record.userId
    },

    async verifyEmail (token) {
      const now = new Date()
      const record = await usableToken(token, 'verify_email', now)
      await useToken(record, now)
      // Mailed to an address the user has since changed: it proves nothing about the current one.
      if (!await store.markEmailVerified(record.userId, record.email, now)) throw new InvalidVerificationTokenError()
    }
  }
  fastify.decorate('account', account)
}, { name: 'account', dependencies: ['store', 'passwords', 'mailer'] })

function minutes (seconds: number): string {
  const count = Math.max(1, Math.round(seconds / 60))
  return count === 1 ? '1 minute' : `${count} minutes`
}

function resetMail (to: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'Reset your password',
    text: `Someone asked to reset the password of the account of ${to}.\n\n` +
      `To choose a new password, open this link within ${minutes(ttlSeconds)}:\n\n${link}\n\n` +
      'The link works once. If you did not ask for it, ignore this mail: your password stays as it is.\n'
  }
}

function verificationMail (to: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'Verify your email address',
    text: `Please confirm that ${to} is your address by opening this link within ${minutes(ttlSeconds)}:\n\n${link}\n\n` +
      'If you did not create an account or change its address, ignore this mail.\n'
  }
}

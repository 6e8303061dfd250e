import type { AccountStore, NewUser, UserChanges, UserRecord } from '../../db/store.js'
import type { Authentication } from '../authentication/authentication.js'
import { currentDate, type Clock } from '../clock.js'
import { InvalidVerificationTokenError, PasswordAlreadySetError, UserNotFoundError, ValidationFailedError } from '../errors.js'
import type { LoginThrottle } from '../lockout/login-throttle.js'
import type { Logger } from '../logger.js'
import { emailChangedNotice, resetMail, verificationMail } from '../mails.js'
import type { Mailer } from '../mail/mailer.js'
import type { Mfa } from '../mfa/mfa.js'
import { assertPasswordAllowed } from '../password-policy.js'
import type { Passwords } from '../passwords/passwords.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { Actor } from '../sessions/actor.js'
import type { Sessions, StartedSession } from '../sessions/sessions.js'
import type { Webhooks } from '../webhooks/webhooks.js'
import type { EmailCodes } from '../email-codes/email-codes.js'
import { createEmailCodeSignIn, type SignInWithEmailCode } from './email-code-sign-in.js'
import { createMailedTokens, type MailedTokensOptions } from './mailed-tokens.js'
import { createProveAddress, type ProveAddress } from './prove-address.js'

export { LIVE_RESET_LINKS, RESET_MAILS_PER_DAY, RESET_MAILS_PER_HOUR } from './mailed-tokens.js'

export interface AccountLifecycle {
  /** A new account (the password policy applies) and its verification mail. Throws DuplicateValueError (409). */
  register (user: Omit<NewUser, 'passwordHash'> & { password: string }): Promise<UserRecord>
  /**
   * The one place every new password (register, change, reset) passes through before it
   * is stored: the password policy (400 PASSWORD_TOO_COMMON) is checked here. Returns the hash to store.
   */
  acceptNewPassword (password: string): Promise<string>
  /**
   * A partial profile update. A new email needs a fresh session (403 REAUTHENTICATION_REQUIRED
   * past REAUTH_MAX_AGE); it is then unverified, the old address is told, every one-time token
   * is voided, and every session ends: the actor goes on in `session`, a new one.
   */
  updateProfile (actor: Actor, changes: Pick<UserChanges, 'firstName' | 'lastName' | 'username' | 'email'>): Promise<{ session?: StartedSession }>
  /** Confirms the current password, stores the new one, voids one-time tokens and ends every other session. */
  changePassword (actor: Actor, currentPassword: string, newPassword: string): Promise<void>
  /**
   * Confirms the password and deletes the account, its sessions and tokens with it. An account without a
   * password (provider or passkey only) needs a fresh session instead (403 REAUTHENTICATION_REQUIRED);
   * an account with one that sends none is 400 VALIDATION_FAILED.
   */
  deleteAccount (actor: Actor, password: string | undefined): Promise<void>
  /** Mails a verification link to the user's address (token and mail written together), off the request's path. */
  sendVerificationMail (user: { id: number, email: string }): void
  /**
   * Mails a reset link when the email belongs to a user, within its quotas, and nothing otherwise; all of it off the request's
   * path, RESET_WORK_DELAY_MIN_MS to RESET_WORK_DELAY_MIN_MS + RESET_WORK_DELAY_SPREAD_MS after it, whatever the address.
   */
  sendPasswordResetMail (email: string): void
  /**
   * Sets the password from a mailed token, voids every other token and ends every session. The link proves
   * the address: an account whose address was never verified is claimed (see proveAddress); a verified one
   * keeps its second factors, and a locked second factor takes a few codes again (MFA_WRONG_CODES_AFTER_RESET).
   */
  resetPassword (token: string, newPassword: string, client: Client): Promise<void>
  /** Marks the address the token was mailed to as verified; a never-verified account is claimed (see proveAddress). */
  verifyEmail (token: string, client: Client): Promise<void>
  /** The one function every proof of an address calls (./prove-address.ts): the claim of a never-verified account, its events. */
  proveAddress: ProveAddress
  /** A sign-in (or a password-free sign-up) by a mailed code: ./email-code-sign-in.ts. */
  signInWithEmailCode: SignInWithEmailCode
  /**
   * The first password of an account that has none (made by a mailed code, a provider or a passkey): a fresh session
   * (403 REAUTHENTICATION_REQUIRED past REAUTH_MAX_AGE), the password policy, then as a password change (every other
   * session ends, mailed links void). 409 PASSWORD_ALREADY_SET when the account has one: change it with its current one.
   */
  setFirstPassword (actor: Actor, password: string): Promise<void>
}

/**
 * When forgot-password's work starts after the answer: at least the minimum (past the requests that follow at once),
 * then at a random moment within the spread, so that no request can be timed against it (issue 33, finding 17).
 */
export const RESET_WORK_DELAY_MIN_MS = 50
export const RESET_WORK_DELAY_SPREAD_MS = 450

/** The account's settings are its mailed links' (core/accounts/mailed-tokens.ts). */
export type AccountOptions = MailedTokensOptions

export interface AccountDependencies {
  store: Pick<AccountStore, 'createUser' | 'updateUser' | 'changeEmail' | 'changePassword' | 'deleteUser' | 'findUserByEmail' |
    'issueOneTimeToken' | 'findOneTimeToken' | 'useOneTimeToken' | 'proveAddress' | 'findUserById'>
  clock: Clock
  log: Logger
  passwords: Pick<Passwords, 'hash'>
  mailer: Pick<Mailer, 'send' | 'forOutbox' | 'wake'>
  sessions: Pick<Sessions, 'requireFresh' | 'proof' | 'start'>
  securityEvents: Pick<SecurityEvents, 'record'>
  authentication: Pick<Authentication, 'confirmPassword' | 'completeSignIn'>
  emailCodes: Pick<EmailCodes, 'check' | 'use' | 'release'>
  loginThrottle: Pick<LoginThrottle, 'succeeded'>
  mfa: Pick<Mfa, 'afterPasswordReset'>
  /**
   * user.created, user.updated (a profile change without a new email: that one is the email_changed security event's),
   * user.deleted: each written by the store in the change's own transaction.
   */
  webhooks: Pick<Webhooks, 'userEvent' | 'wake'>
}

/**
 * The account's rules: registration, profile and email change, password change
 * and reset, deletion, and the mailed one-time tokens (256 random bits, stored
 * as SHA-256 hashes, single use, expiring, voided by a password or email change).
 * Routes only translate HTTP to these calls.
 */
export function createAccount (deps: AccountDependencies, options: AccountOptions): AccountLifecycle {
  const { store, clock, log, passwords, mailer, sessions, securityEvents, authentication, loginThrottle, mfa, webhooks, emailCodes } = deps
  const tokens = createMailedTokens({ store, clock, mailer }, options)
  const proveAddress = createProveAddress({ store, clock, securityEvents })
  const signInWithEmailCode = createEmailCodeSignIn({
    store, emailCodes, proveAddress, completeSignIn: authentication.completeSignIn, loginThrottle, securityEvents, webhooks
  })

  const account: AccountLifecycle = {
    async register ({ password, ...fields }) {
      const user = await store.createUser({ ...fields, passwordHash: await account.acceptNewPassword(password) }, webhooks.userEvent('user.created'))
      webhooks.wake()
      account.sendVerificationMail(user)
      return user
    },

    async acceptNewPassword (password) {
      await assertPasswordAllowed(password)
      return await passwords.hash(password)
    },

    async updateProfile ({ user, sessionId, client }, changes) {
      const emailChanges = changes.email !== undefined && changes.email !== user.email
      // The email is how an account is recovered: changing it is what a session thief would do first.
      if (emailChanges) await sessions.requireFresh(sessionId)
      if (!emailChanges) {
        const updated = await store.updateUser(user.id, changes, webhooks.userEvent('user.updated'))
        if (updated === undefined) throw new UserNotFoundError()
        webhooks.wake()
        return {}
      }

      const now = currentDate(clock)
      const { authenticatedAt, methods } = await sessions.proof(sessionId)
      // One transaction: the new address (unverified until a link mailed to it is followed), every mailed token
      // void, the warning to the old address in the outbox (it must survive a crash and an SMTP outage), and every
      // session ended: whoever held a session before the change loses it (OWASP ASVS 3.3.3).
      const notice = mailer.forOutbox(emailChangedNotice(user.email, changes.email as string, now, client))
      const { user: updated, sessionsEnded } = await store.changeEmail(user.id, { ...changes, emailVerified: false, emailVerifiedAt: null }, now, notice)
      if (updated === undefined) throw new UserNotFoundError()
      mailer.wake()
      account.sendVerificationMail(updated)
      if (sessionsEnded > 0) await securityEvents.record('session_revoked', client, { userId: user.id, detail: { reason: 'all sessions ended', sessions: sessionsEnded } })
      // The actor goes on in a new session, as fresh as the one it came from and with its methods (the change is no new proof).
      const session = await sessions.start(user.id, client, { methods, authenticatedAt })
      await securityEvents.record('email_changed', client, { userId: user.id, sessionId: session.sessionId, detail: { previous_email: user.email, email: updated.email } })
      return { session }
    },

    async changePassword ({ user, sessionId, client }, currentPassword, newPassword) {
      await authentication.confirmPassword(user, currentPassword, client, sessionId)
      const passwordHash = await account.acceptNewPassword(newPassword)
      // One transaction: the new hash, every mailed token void, every other session ended, and this session marked
      // as just authenticated (the current password was proved in it). A crash cannot leave old sessions alive.
      const sessionsEnded = await store.changePassword(user.id, passwordHash, currentDate(clock), sessionId)
      if (sessionsEnded > 0) await securityEvents.record('session_revoked', client, { userId: user.id, detail: { reason: 'all sessions ended', sessions: sessionsEnded } })
      await securityEvents.record('password_changed', client, { userId: user.id, sessionId })
    },

    async deleteAccount ({ user, sessionId, client }, password) {
      if (user.passwordHash === null) {
        // Nothing to type: a recent sign-in (provider, passkey) or passkey re-authentication is the proof.
        await sessions.requireFresh(sessionId)
      } else {
        if (password === undefined) throw new ValidationFailedError('body must have required property \'password\': confirm the account\'s password')
        await authentication.confirmPassword(user, password, client, sessionId)
      }
      // Its refresh tokens, sessions, mailed tokens and security events go with it (ON DELETE CASCADE).
      if (!await store.deleteUser(user.id, webhooks.userEvent('user.deleted')?.(user))) throw new UserNotFoundError()
      webhooks.wake()
      log.info({ event: 'account_deleted', userId: user.id, reqId: client.requestId }, 'account deleted')
    },

    sendVerificationMail (user) {
      mailer.send(async () => {
        await tokens.issueWithMail(user, 'verify_email', (token) => verificationMail(user.email, tokens.linkOf('/verify-email', token), options.emailVerificationTtlSeconds))
      })
    },

    sendPasswordResetMail (email) {
      // The same job for every address, and it decides: the lookup, then for a known one the token, the outbox and the
      // delivery. Run on the answer's heels, a known address's work slowed the next request by some 6 ms, which told
      // whether the address has an account (issue 33, finding 17); at a random moment a while later, no request pays for it.
      mailer.send(async () => {
        const user = await store.findUserByEmail(email)
        if (user === undefined) return
        const issued = await tokens.issueWithMail(user, 'reset_password', (token) => resetMail(user.email, tokens.linkOf('/reset-password', token), options.passwordResetTtlSeconds))
        if (!issued) log.info({ userId: user.id }, 'password-reset mail not sent: the address reached its hourly or daily quota')
      }, { delayMs: RESET_WORK_DELAY_MIN_MS + Math.random() * RESET_WORK_DELAY_SPREAD_MS })
    },

    async resetPassword (token, newPassword, client) {
      const now = currentDate(clock)
      const record = await tokens.usable(token, 'reset_password', now)
      // Before the token is used: a password the policy refuses must not burn the link.
      const passwordHash = await account.acceptNewPassword(newPassword)
      await tokens.use(record, now)
      // The password, the voided tokens, the ended sessions, and (the link reached the inbox) the proof of the address, together.
      const outcome = await proveAddress({ userId: record.userId, email: record.email, passwordHash }, client)
      // The owner proved control of the address: the lockout a guesser caused ends.
      await loginThrottle.succeeded(record.email)
      // A locked second factor takes a few codes again (not the whole count: see MFA_WRONG_CODES_AFTER_RESET).
      await mfa.afterPasswordReset(record.userId)
      const claimed = outcome.outcome === 'proved' && outcome.claimed !== undefined
      await securityEvents.record('password_reset', client, { userId: record.userId, ...(claimed ? { detail: { address_claimed: true } } : {}) })
    },

    async verifyEmail (token, client) {
      const now = currentDate(clock)
      const record = await tokens.usable(token, 'verify_email', now)
      await tokens.use(record, now)
      // Mailed to an address the user has since changed: it proves nothing about the current one.
      const outcome = await proveAddress({ userId: record.userId, email: record.email }, client)
      if (outcome.outcome !== 'proved') throw new InvalidVerificationTokenError()
    },

    proveAddress,
    signInWithEmailCode,

    async setFirstPassword ({ user, sessionId, client }, password) {
      // Nothing to confirm it with: the session's recent proof (a mailed code, a passkey, a provider) stands for the current password.
      await sessions.requireFresh(sessionId)
      if (user.passwordHash !== null) throw new PasswordAlreadySetError()
      const passwordHash = await account.acceptNewPassword(password)
      // As a password change, in one transaction: the hash, mailed links void, every other session ended, this one fresh.
      const sessionsEnded = await store.changePassword(user.id, passwordHash, currentDate(clock), sessionId)
      if (sessionsEnded > 0) await securityEvents.record('session_revoked', client, { userId: user.id, detail: { reason: 'all sessions ended', sessions: sessionsEnded } })
      await securityEvents.record('password_changed', client, { userId: user.id, sessionId, detail: { first_password: true } })
    }
  }
  return account
}

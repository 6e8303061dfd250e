import type { AccountStore, UserRecord } from '../../db/store.js'
import { AccountDisabledError, EmailNotVerifiedError, InvalidCredentialsError, InvalidMfaCodeError, InvalidMfaTokenError, MfaCodeRequiredError, MfaLockedError, mfaRequired } from '../errors.js'
import type { LoginThrottle, Reservation } from '../lockout/login-throttle.js'
import type { Logger } from '../logger.js'
import { MFA_MAX_WRONG_CODES, type Mfa, type MfaVerdict } from '../mfa/mfa.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { Passwords } from '../passwords/passwords.js'
import type { AuthenticationMethod } from '../sessions/authentication-methods.js'
import type { Sessions, StartedSession } from '../sessions/sessions.js'

export interface Authentication {
  /**
   * Email and password to a new session: 401 INVALID_CREDENTIALS (the same for an unknown email
   * and a wrong password), 429 while the account is locked, 403 EMAIL_NOT_VERIFIED (only after
   * the password matched) with REQUIRE_EMAIL_VERIFICATION, 403 ACCOUNT_DISABLED (also only after it matched)
   * while an operator has disabled the account.
   */
  logIn (email: string, password: string, client: Client): Promise<{ user: UserRecord, session: StartedSession }>
  /**
   * The second step of a login of an account with TOTP (the first answered 403 MFA_REQUIRED with the
   * mfa_token): a TOTP code or a recovery code to a new session, which counts as a password proof.
   * 401 INVALID_MFA_TOKEN for a token unknown, used, expired or void; 401 INVALID_MFA_CODE for a wrong,
   * replayed or used code, counted with the account's failed logins (429 while it is locked); 403 MFA_LOCKED
   * once MFA_MAX_WRONG_CODES wrong codes were tried since the last right one, until a password reset.
   */
  completeMfaLogin (mfaToken: string, code: string, client: Client): Promise<{ user: UserRecord, session: StartedSession }>
  /**
   * The password a signed-in user types to confirm a change (password change, deletion,
   * re-authentication): 401 INVALID_CREDENTIALS when wrong, counted with the account's failed
   * logins, so a stolen session cannot guess its way to the account.
   */
  confirmPassword (user: UserRecord, password: string, client: Client, sessionId: string): Promise<void>
  /**
   * A confirmed password makes the session fresh for sensitive actions (REAUTH_MAX_AGE); on an account
   * with TOTP only together with a current TOTP or recovery code (as a login needs both): without one
   * 403 MFA_REQUIRED, a wrong one 401 INVALID_MFA_CODE, counted with the account's failed logins.
   */
  reauthenticate (user: UserRecord, proof: { password: string, code?: string }, client: Client, sessionId: string): Promise<void>
}

export interface AuthenticationOptions {
  /** REQUIRE_EMAIL_VERIFICATION: login refuses (403) until the email is verified. */
  requireEmailVerification: boolean
}

export interface AuthenticationDependencies {
  store: Pick<AccountStore, 'findUserByEmail' | 'findUserById' | 'updateUser' | 'countRecoveryCodes'>
  passwords: Passwords
  loginThrottle: LoginThrottle
  sessions: Pick<Sessions, 'start' | 'markAuthenticated'>
  securityEvents: Pick<SecurityEvents, 'record'>
  mfa: Pick<Mfa, 'isRequired' | 'challenge' | 'openChallenge' | 'attempt' | 'confirmCode' | 'providerOf'>
  log: Logger
}

/**
 * Every check of a password or second-factor code against an account, in one
 * place, under the account lockout: the attempt is reserved before the hash is
 * checked (so a burst of guesses cannot all be judged) and cleared by a right
 * password, or, for an account with TOTP, only by a right code at the login's
 * second step. Failures and lockouts are security events.
 */
export function createAuthentication (
  { store, passwords, loginThrottle, sessions, securityEvents, mfa, log }: AuthenticationDependencies, { requireEmailVerification }: AuthenticationOptions
): Authentication {
  /**
   * Checks the password under a reserved attempt; `matches` is true when it matched, and then the failures
   * are cleared, unless `settleMatch` is false: the caller then settles the reservation itself.
   */
  async function judged (
    account: string, check: () => Promise<boolean>, client: Client, subject: { userId: number | null, sessionId?: string }, settleMatch = true
  ): Promise<{ matches: boolean, reservation: Reservation }> {
    const reservation = await loginThrottle.reserve(account)
    const matches = await settled(account, reservation, check)
    if (matches) {
      if (settleMatch) await loginThrottle.succeeded(account)
      return { matches, reservation }
    }
    await securityEvents.record('login_failed', client, subject)
    if (reservation.locks) await securityEvents.record('account_locked', client, { ...subject, detail: { failures: reservation.failures } })
    return { matches, reservation }
  }

  /** Runs `work` while an attempt of `account` is reserved; when it fails (503 BUSY, store down), the attempt is given back (nothing was judged). */
  async function settled<T> (account: string, reservation: Reservation, work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      await loginThrottle.release(account, reservation)
      throw error
    }
  }

  /** A TOTP or recovery code of a signed-in user, under the account lockout as at a login's second step; 401 INVALID_MFA_CODE. Returns its kind. */
  async function confirmCode (user: UserRecord, code: string, client: Client, subject: { userId: number, sessionId: string }): Promise<MfaVerdict['method']> {
    const reservation = await loginThrottle.reserve(user.email)
    const verdict = await settled(user.email, reservation, () => mfa.confirmCode(user, code))
    if (verdict.outcome === 'passed') {
      await loginThrottle.succeeded(user.email)
      if (verdict.method === 'recovery_code') {
        await securityEvents.record('recovery_code_used', client, { ...subject, detail: { left: await store.countRecoveryCodes(user.id) } })
      }
      return verdict.method
    }
    if (verdict.outcome === 'refused') {
      await securityEvents.record('mfa_failed', client, { ...subject, detail: { method: verdict.method, failures: verdict.failures } })
      if (reservation.locks) await securityEvents.record('account_locked', client, { ...subject, detail: { failures: reservation.failures } })
      if (verdict.lockedNow === true) await securityEvents.record('mfa_locked', client, { ...subject, detail: { wrong_codes: MFA_MAX_WRONG_CODES } })
    } else {
      // The one-shot challenge was gone (TOTP turned off meanwhile) or the second factor is locked: nothing was judged.
      await loginThrottle.release(user.email, reservation)
      if (verdict.outcome === 'locked') throw new MfaLockedError()
    }
    throw new InvalidMfaCodeError()
  }

  const authentication: Authentication = {
    async logIn (email, password, client) {
      const user = await store.findUserByEmail(email)
      // An unknown email spends the time of a real verification: the answer and its timing tell nothing.
      // An account without a password (made by a provider sign-in) spends it too: it answers as a wrong password.
      const passwordHash = user?.passwordHash ?? null
      const { matches, reservation } = await judged(email, async () => passwordHash === null
        ? await passwords.verifyNothing(password)
        : await passwords.verify(passwordHash, password), client, { userId: user?.id ?? null }, false)
      if (!matches || user === undefined || passwordHash === null) throw new InvalidCredentialsError()
      // Asked only now: before the password was judged, the extra read would tell accounts apart by timing.
      const secondStep = await settled(email, reservation, () => mfa.isRequired(user.id))
      // With a second factor the password alone proves nothing yet: its attempt is given back (the state
      // before it, lockout time included: a right password never re-arms a stranger's lockout), and the
      // failures so far (wrong codes among them) stay until a code passes.
      if (secondStep) await loginThrottle.release(email, reservation)
      else await loginThrottle.succeeded(email)
      // Only after the password matched: the refusal tells a guesser nothing about the account.
      if (user.disabledAt !== null) throw new AccountDisabledError()
      if (requireEmailVerification && !user.emailVerified) throw new EmailNotVerifiedError()
      if (passwords.needsRehash(passwordHash)) {
        // Hash parameters were raised since this password was set: only now do we hold the password to rehash it.
        try {
          await store.updateUser(user.id, { passwordHash: await passwords.hash(password) })
        } catch (error) {
          log.warn({ err: error, userId: user.id }, 'password rehash failed; retried at the next login')
        }
      }
      if (secondStep) throw mfaRequired(await mfa.challenge(user.id))
      const session = await sessions.start(user.id, client, { methods: ['password'] })
      await securityEvents.record('login', client, { userId: user.id, sessionId: session.sessionId, detail: { method: 'password' } })
      return { user, session }
    },

    async completeMfaLogin (mfaToken, code, client) {
      const challenge = await mfa.openChallenge(mfaToken)
      const user = challenge === undefined ? undefined : await store.findUserById(challenge.userId)
      if (user === undefined) throw new InvalidMfaTokenError()
      // Disabling voids the pending challenges; this covers a challenge opened in the same instant.
      if (user.disabledAt !== null) throw new AccountDisabledError()
      // Under the same lockout as the password: a wrong code is a failed login of the account.
      const reservation = await loginThrottle.reserve(user.email)
      const verdict = await settled(user.email, reservation, () => mfa.attempt(mfaToken, user, code))
      if (verdict.outcome === 'invalid' || verdict.outcome === 'locked') {
        // Used, expired or voided by a parallel attempt since we looked, or the second factor is locked: nothing was judged.
        await loginThrottle.release(user.email, reservation)
        throw verdict.outcome === 'locked' ? new MfaLockedError() : new InvalidMfaTokenError()
      }
      const subject = { userId: user.id }
      if (verdict.outcome === 'refused') {
        await securityEvents.record('mfa_failed', client, { ...subject, detail: { method: verdict.method, failures: verdict.failures } })
        if (reservation.locks) await securityEvents.record('account_locked', client, { ...subject, detail: { failures: reservation.failures } })
        if (verdict.lockedNow === true) await securityEvents.record('mfa_locked', client, { ...subject, detail: { wrong_codes: MFA_MAX_WRONG_CODES } })
        throw new InvalidMfaCodeError()
      }
      await loginThrottle.succeeded(user.email)
      if (verdict.method === 'recovery_code') {
        await securityEvents.record('recovery_code_used', client, { ...subject, detail: { left: await store.countRecoveryCodes(user.id) } })
      }
      // The first factor is the one the mfa_token was issued after: a password, or a provider's sign-in.
      const provider = mfa.providerOf(mfaToken)
      // Its authenticatedAt is now: the first factor and the code together are this session's proof (REAUTH_MAX_AGE).
      const session = await sessions.start(user.id, client, { methods: [provider === undefined ? 'password' : 'provider', verdict.method] })
      const firstFactor = provider === undefined ? {} : { provider }
      await securityEvents.record('login', client, {
        userId: user.id, sessionId: session.sessionId, detail: { method: `${provider === undefined ? 'password' : 'oidc'}+${verdict.method}`, ...firstFactor }
      })
      return { user, session }
    },

    async confirmPassword (user, password, client, sessionId) {
      const { passwordHash } = user
      const { matches } = await judged(user.email, async () => passwordHash === null ? await passwords.verifyNothing(password) : await passwords.verify(passwordHash, password), client, { userId: user.id, sessionId })
      if (!matches) throw new InvalidCredentialsError()
    },

    async reauthenticate (user, { password, code }, client, sessionId) {
      const { passwordHash } = user
      const subject = { userId: user.id, sessionId }
      // With TOTP the password alone settles nothing (as at login): the failures stay until a code passes.
      const { matches, reservation } = await judged(user.email, async () => passwordHash === null
        ? await passwords.verifyNothing(password)
        : await passwords.verify(passwordHash, password), client, subject, false)
      if (!matches) throw new InvalidCredentialsError()
      let methods: AuthenticationMethod[] = ['password']
      if (await settled(user.email, reservation, () => mfa.isRequired(user.id))) {
        // A one-factor step-up would unlock turning the second factor off: the code is needed too.
        await loginThrottle.release(user.email, reservation)
        if (code === undefined || code.trim() === '') throw new MfaCodeRequiredError()
        methods = ['password', await confirmCode(user, code, client, subject)]
      } else {
        await loginThrottle.succeeded(user.email)
      }
      await sessions.markAuthenticated(sessionId, methods)
      await securityEvents.record('reauthenticated', client, { ...subject, detail: { method: methods.join('+') } })
    }
  }
  return authentication
}

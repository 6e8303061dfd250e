import type { AccountStore, UserRecord } from '../../db/store.js'
import type { EmailCodes, RightEmailCode } from '../email-codes/email-codes.js'
import { InvalidCredentialsError, InvalidEmailCodeError, InvalidMfaCodeError, ValidationFailedError, InvalidMfaTokenError, MfaCodeRequiredError, MfaLockedError, mfaRequired } from '../errors.js'
import type { LoginThrottle, Reservation } from '../lockout/login-throttle.js'
import type { Logger } from '../logger.js'
import { MFA_MAX_WRONG_CODES, type Mfa, type MfaVerdict } from '../mfa/mfa.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { Passwords } from '../passwords/passwords.js'
import type { AuthenticationMethod } from '../sessions/authentication-methods.js'
import type { Sessions, StartedSession } from '../sessions/sessions.js'
import { createSignInCompletion, methodOfFirstStep, refuseSignIn, type CompleteSignIn } from './complete-sign-in.js'

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
   * A confirmed password, or a code mailed to the account's address (POST /auth/email-code: 401 INVALID_CODE when
   * wrong, counted against the code), makes the session fresh for sensitive actions (REAUTH_MAX_AGE); on an account
   * with TOTP only together with a current TOTP or recovery code (as a login needs both): without one
   * 403 MFA_REQUIRED, a wrong one 401 INVALID_MFA_CODE, counted with the account's failed logins. Exactly one of
   * the password and the mailed code (400 VALIDATION_FAILED otherwise).
   */
  reauthenticate (user: UserRecord, proof: ReauthenticationProof, client: Client, sessionId: string): Promise<void>
  /**
   * The one end of every sign-in, once its method proved the user (./complete-sign-in.ts): 403 ACCOUNT_DISABLED,
   * 403 EMAIL_NOT_VERIFIED (REQUIRE_EMAIL_VERIFICATION, at a first step), an `mfa_token` when one factor is not
   * enough, else a new session and its `login` (`passkey_login`) event. Passkeys and providers end here too.
   */
  completeSignIn: CompleteSignIn
}

/** What POST /auth/reauthenticate proves the user with: its password or a mailed code, and with TOTP on a TOTP or recovery code. */
export interface ReauthenticationProof {
  password?: string
  emailCode?: string
  code?: string
}

export interface AuthenticationOptions {
  /** REQUIRE_EMAIL_VERIFICATION: a sign-in (password, passkey, provider) refuses (403) until the email is verified. */
  requireEmailVerification: boolean
}

export interface AuthenticationDependencies {
  store: Pick<AccountStore, 'findUserByEmail' | 'findUserById' | 'updateUser' | 'countRecoveryCodes'>
  passwords: Passwords
  loginThrottle: LoginThrottle
  sessions: Pick<Sessions, 'start' | 'markAuthenticated'>
  securityEvents: Pick<SecurityEvents, 'record'>
  mfa: Pick<Mfa, 'isRequired' | 'challenge' | 'openChallenge' | 'attempt' | 'confirmCode' | 'firstStepOf'>
  /** The mailed sign-in codes, for a re-authentication by code. */
  emailCodes: Pick<EmailCodes, 'check' | 'use' | 'release'>
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
  { store, passwords, loginThrottle, sessions, securityEvents, mfa, emailCodes, log }: AuthenticationDependencies, { requireEmailVerification }: AuthenticationOptions
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

  /** reauthenticate with a code mailed to the account's address: the mailbox is the proof, as a password would be. */
  async function reauthenticateWithMailedCode (
    user: UserRecord, emailCode: string, code: string | undefined, client: Client, subject: { userId: number, sessionId: string }
  ): Promise<void> {
    let right: RightEmailCode
    try {
      right = await emailCodes.check(user.email, emailCode)
    } catch (error) {
      if (error instanceof InvalidEmailCodeError) await securityEvents.record('login_failed', client, { ...subject, detail: { method: 'email_code' } })
      throw error
    }
    const methods: AuthenticationMethod[] = ['email_code']
    if (await mfa.isRequired(user.id)) {
      // As with a password: one factor does not unlock turning the second one off. The right code stays unspent meanwhile.
      if (code === undefined || code.trim() === '') {
        await emailCodes.release(right)
        throw new MfaCodeRequiredError()
      }
      methods.push(await confirmCode(user, code, client, subject))
    }
    await emailCodes.use(right)
    await sessions.markAuthenticated(subject.sessionId, methods)
    await securityEvents.record('reauthenticated', client, { ...subject, detail: { method: methods.join('+') } })
  }

  const completeSignIn = createSignInCompletion({ mfa, loginThrottle, sessions, securityEvents }, { requireEmailVerification })

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
      // Only after the password matched (in completeSignIn): a refusal tells a guesser nothing about the account.
      const outcome = await completeSignIn({ user, method: { kind: 'password' }, client, secondFactorRequired: secondStep })
      if (passwords.needsRehash(passwordHash)) {
        // Hash parameters were raised since this password was set: only now do we hold the password to rehash it.
        try {
          await store.updateUser(user.id, { passwordHash: await passwords.hash(password) })
        } catch (error) {
          log.warn({ err: error, userId: user.id }, 'password rehash failed; retried at the next login')
        }
      }
      if (outcome.kind === 'second_factor') throw mfaRequired(outcome.mfaToken)
      return { user, session: outcome.session }
    },

    async completeMfaLogin (mfaToken, code, client) {
      const challenge = await mfa.openChallenge(mfaToken)
      const user = challenge === undefined ? undefined : await store.findUserById(challenge.userId)
      if (user === undefined) throw new InvalidMfaTokenError()
      // Before the code is judged. Disabling voids the pending challenges; this covers a challenge opened in the same instant.
      // The address was judged at the first step.
      refuseSignIn(user, false)
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
      // The first factor is the one the mfa_token was issued after: a password, a provider's sign-in or a mailed code.
      const { session } = await completeSignIn({ user, method: methodOfFirstStep(mfa.firstStepOf(mfaToken)), client, secondFactor: verdict.method })
      return { user, session }
    },

    async confirmPassword (user, password, client, sessionId) {
      const { passwordHash } = user
      const { matches } = await judged(user.email, async () => passwordHash === null ? await passwords.verifyNothing(password) : await passwords.verify(passwordHash, password), client, { userId: user.id, sessionId })
      if (!matches) throw new InvalidCredentialsError()
    },

    async reauthenticate (user, { password, emailCode, code }, client, sessionId) {
      const subject = { userId: user.id, sessionId }
      const oneProof = 'body must have either property \'password\' or property \'email_code\''
      if (password !== undefined && emailCode !== undefined) throw new ValidationFailedError(oneProof)
      if (emailCode !== undefined) return await reauthenticateWithMailedCode(user, emailCode, code, client, subject)
      if (password === undefined) throw new ValidationFailedError(oneProof)
      const { passwordHash } = user
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
    },

    completeSignIn
  }
  return authentication
}

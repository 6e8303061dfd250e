import type { UserRecord } from '../../db/store.js'
import { AccountDisabledError, EmailNotVerifiedError } from '../errors.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { LoginThrottle } from '../lockout/login-throttle.js'
import type { Mfa } from '../mfa/mfa.js'
import type { AuthenticationMethod } from '../sessions/authentication-methods.js'
import type { Sessions, StartedSession } from '../sessions/sessions.js'

/**
 * How the user proved who they are at a sign-in's first step. A passkey is used with user verification
 * (core/passkeys), so it is two factors on its own; a password, a provider's sign-in or a mailed code
 * (POST /auth/email-code/verify: it proves the mailbox) is one.
 */
export type SignInMethod =
  | { kind: 'password' }
  | { kind: 'passkey', passkeyId: string }
  | { kind: 'provider', provider: string }
  | { kind: 'email_code' }

/** The code of a sign-in's second step (POST /auth/mfa/verify): a TOTP code, or a recovery code standing in for one. */
export type SecondFactorCode = 'totp' | 'recovery_code'

export interface SignIn {
  user: UserRecord
  method: SignInMethod
  client: Client
  /** Given at the second step: the code that passed. Its first step's verdict on the address stands (it is not judged again). */
  secondFactor?: SecondFactorCode
  /**
   * Whether the account asks for a second factor, when the method had to read it already (a password's attempt
   * is settled by it before the sign-in goes on); read here otherwise.
   */
  secondFactorRequired?: boolean
}

/**
 * What a sign-in ends in: a session, or, for an account with TOTP whose method is one factor, an `mfa_token`
 * for POST /auth/mfa/verify (answered as 403 MFA_REQUIRED, or the provider's `#mfa_token=`).
 */
export type SignInOutcome = { kind: 'session', session: StartedSession } | { kind: 'second_factor', mfaToken: string }

/** A sign-in that holds two factors already: a passkey's, or a second step's. */
export type TwoFactorSignIn = SignIn & ({ secondFactor: SecondFactorCode } | { method: Extract<SignInMethod, { kind: 'passkey' }> })

/** completeSignIn: with two factors, it asks for none, so its outcome is the session (or a refusal). */
export interface CompleteSignIn {
  (signIn: TwoFactorSignIn): Promise<{ kind: 'session', session: StartedSession }>
  (signIn: SignIn): Promise<SignInOutcome>
}

/** Why an account is not signed in to: an operator disabled it, or (REQUIRE_EMAIL_VERIFICATION) nobody proved its address. */
export type AccountRefusal = 'account_disabled' | 'email_not_verified'

/**
 * The account's own refusals, in their one order: disabled first, then the address when it must be verified.
 * Pure, for the steps that answer before a sign-in completes (the provider's callback hands out a code first).
 */
export function accountRefusal (user: Pick<UserRecord, 'disabledAt' | 'emailVerified'>, requireVerifiedAddress: boolean): AccountRefusal | undefined {
  if (user.disabledAt !== null) return 'account_disabled'
  if (requireVerifiedAddress && !user.emailVerified) return 'email_not_verified'
  return undefined
}

/** accountRefusal as the API answers it: 403 ACCOUNT_DISABLED, 403 EMAIL_NOT_VERIFIED. */
export function refuseSignIn (user: Pick<UserRecord, 'disabledAt' | 'emailVerified'>, requireVerifiedAddress: boolean): void {
  const refusal = accountRefusal(user, requireVerifiedAddress)
  if (refusal === 'account_disabled') throw new AccountDisabledError()
  if (refusal === 'email_not_verified') throw new EmailNotVerifiedError()
}

export interface SignInCompletionDependencies {
  mfa: Pick<Mfa, 'isRequired' | 'challenge'>
  loginThrottle: Pick<LoginThrottle, 'succeeded'>
  sessions: Pick<Sessions, 'start'>
  securityEvents: Pick<SecurityEvents, 'record'>
}

export interface SignInCompletionOptions {
  /** REQUIRE_EMAIL_VERIFICATION: a first step refuses an account whose address nobody proved. */
  requireEmailVerification: boolean
}

/** A mailed code's mark in an mfa_token: a hyphen, which no provider's name has (OIDC_PROVIDERS: letters, digits, _). */
const EMAIL_CODE_FIRST_STEP = 'email-code'

/** The method's name in a session's methods (its amr) and in the `login` event's `method`. */
const SESSION_METHOD: Record<SignInMethod['kind'], AuthenticationMethod> = { password: 'password', passkey: 'passkey', provider: 'provider', email_code: 'email_code' }
const EVENT_METHOD: Record<Exclude<SignInMethod['kind'], 'passkey'>, string> = { password: 'password', provider: 'oidc', email_code: 'email_code' }

/** What an mfa_token remembers of the first step it followed (MFA.challenge): a provider's name, or a mailed code's mark. */
export function firstStepOf (method: SignInMethod): string | undefined {
  if (method.kind === 'provider') return method.provider
  return method.kind === 'email_code' ? EMAIL_CODE_FIRST_STEP : undefined
}

/** The first step an mfa_token followed, from what it remembers (firstStepOf): a password when nothing. */
export function methodOfFirstStep (firstStep: string | undefined): SignInMethod {
  if (firstStep === undefined) return { kind: 'password' }
  return firstStep === EMAIL_CODE_FIRST_STEP ? { kind: 'email_code' } : { kind: 'provider', provider: firstStep }
}

/**
 * The one end of every sign-in (password, passkey, provider, mailed code, the second step after one; the OAuth
 * interaction carries a session this started): the account's refusals, the second factor, then the
 * session and its security event. What proved the user is the method's own business (its lockout
 * included); this decides what that proof is worth.
 */
export function createSignInCompletion (
  { mfa, loginThrottle, sessions, securityEvents }: SignInCompletionDependencies, { requireEmailVerification }: SignInCompletionOptions
): CompleteSignIn {
  async function completeSignIn ({ user, method, client, secondFactor, secondFactorRequired }: SignIn): Promise<SignInOutcome> {
    refuseSignIn(user, requireEmailVerification && secondFactor === undefined)
    if (method.kind !== 'passkey' && secondFactor === undefined && (secondFactorRequired ?? await mfa.isRequired(user.id))) {
      // One factor on an account with TOTP: no session before the code. After a provider, its name rides in the token.
      return { kind: 'second_factor', mfaToken: await mfa.challenge(user.id, firstStepOf(method)) }
    }
    // The owner is in with a passkey: a lockout that password guesses caused ends, as after a password reset. (A password or
    // a code settled the lockout where it was judged; a provider's sign-in leaves it as it is.)
    if (method.kind === 'passkey') await loginThrottle.succeeded(user.email)
    // Its authenticatedAt is now: these methods are the session's proof (REAUTH_MAX_AGE).
    const methods = secondFactor === undefined ? [SESSION_METHOD[method.kind]] : [SESSION_METHOD[method.kind], secondFactor]
    const session = await sessions.start(user.id, client, { methods })
    const subject = { userId: user.id, sessionId: session.sessionId }
    if (method.kind === 'passkey') {
      await securityEvents.record('passkey_login', client, { ...subject, detail: { passkey_id: method.passkeyId } })
    } else {
      const name = secondFactor === undefined ? EVENT_METHOD[method.kind] : `${EVENT_METHOD[method.kind]}+${secondFactor}`
      await securityEvents.record('login', client, { ...subject, detail: { method: name, ...(method.kind === 'provider' ? { provider: method.provider } : {}) } })
    }
    return { kind: 'session', session }
  }
  // The overloads' promise holds by the first branch above: two factors skip the only other outcome.
  return completeSignIn as CompleteSignIn
}

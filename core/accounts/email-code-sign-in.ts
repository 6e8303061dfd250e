import type { AccountStore, NewUser, UserRecord } from '../../db/store.js'
import type { CompleteSignIn } from '../authentication/complete-sign-in.js'
import type { EmailCodes, RightEmailCode } from '../email-codes/email-codes.js'
import { InvalidEmailCodeError, ValidationFailedError, mfaRequired } from '../errors.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { LoginThrottle } from '../lockout/login-throttle.js'
import type { StartedSession } from '../sessions/sessions.js'
import type { Webhooks } from '../webhooks/webhooks.js'
import type { ProveAddress } from './prove-address.js'

/**
 * What a verify brings for an address that has no account yet: the fields of the new account, or the names of
 * those its body lacks (said only once the code is known right: before, the answer would tell whether the address has an account).
 */
export type EmailCodeRegistration =
  | { fields: Pick<NewUser, 'firstName' | 'lastName' | 'username'> }
  | { missing: string[] }
  /** EMAIL_CODE_SIGNUP is off: no account is made, whatever the body (a code mailed before the address lost its account proves it, but opens nothing). */
  | { closed: true }

/** A sign-in by mailed code: the user, its session, and whether the account was made by it (a password-free sign-up). */
export interface EmailCodeSignIn {
  user: UserRecord
  session: StartedSession
  created: boolean
}

/**
 * POST /auth/email-code/verify: a right code proves the address (proveAddress: a never-verified account loses what its
 * registrant set up, password included), then the one completeSignIn finishes it (403 MFA_REQUIRED with TOTP). For an
 * address without an account the registration fields make one with no password (400 naming the missing fields otherwise,
 * the code unspent). A wrong, expired, used or burnt code is 401 INVALID_CODE and a `login_failed` event.
 */
export type SignInWithEmailCode = (email: string, code: string, registration: EmailCodeRegistration, client: Client) => Promise<EmailCodeSignIn>

export interface EmailCodeSignInDependencies {
  store: Pick<AccountStore, 'findUserByEmail' | 'findUserById' | 'createUser'>
  emailCodes: Pick<EmailCodes, 'check' | 'use' | 'release'>
  proveAddress: ProveAddress
  completeSignIn: CompleteSignIn
  loginThrottle: Pick<LoginThrottle, 'succeeded'>
  securityEvents: Pick<SecurityEvents, 'record'>
  webhooks: Pick<Webhooks, 'userEvent' | 'wake'>
}

export function createEmailCodeSignIn (
  { store, emailCodes, proveAddress, completeSignIn, loginThrottle, securityEvents, webhooks }: EmailCodeSignInDependencies
): SignInWithEmailCode {
  /** The account a right code signs in to: the address's, or a new one made from the registration (the code spent only then). */
  async function accountOf (email: string, right: RightEmailCode, registration: EmailCodeRegistration): Promise<{ user: UserRecord, created: boolean }> {
    const existing = await store.findUserByEmail(email)
    if (existing !== undefined) {
      await emailCodes.use(right)
      return { user: existing, created: false }
    }
    if ('closed' in registration) throw new InvalidEmailCodeError()
    if ('missing' in registration) {
      // The code stays good: the same code, with the fields, makes the account.
      await emailCodes.release(right)
      throw new ValidationFailedError(`No account has this address: to create one, send the code again with ${registration.missing.join(', ')}`)
    }
    let user: UserRecord
    try {
      // No password: its owner sets one later if it wants one (POST /auth/password). A taken username is 409, the code unspent.
      user = await store.createUser({ ...registration.fields, email, passwordHash: null }, webhooks.userEvent('user.created'))
    } catch (error) {
      await emailCodes.release(right)
      throw error
    }
    webhooks.wake()
    // 401 when a racing request spent the code first: it found this account and signed in to it, so the account
    // stays (a code expiring in between leaves it too, unproved and without a password, until a code signs in to it).
    await emailCodes.use(right)
    return { user, created: true }
  }

  return async function signInWithEmailCode (email, code, registration, client) {
    let right: RightEmailCode
    try {
      right = await emailCodes.check(email, code)
    } catch (error) {
      if (error instanceof InvalidEmailCodeError) {
        const user = await store.findUserByEmail(email)
        await securityEvents.record('login_failed', client, { userId: user?.id ?? null, detail: { method: 'email_code' } })
      }
      throw error
    }
    const { user, created } = await accountOf(email, right, registration)
    // The code reached the inbox: the address is proved (and a squatter's never-verified account claimed: docs/accounts.md).
    const proof = await proveAddress({ userId: user.id, email, clearsPassword: true }, client)
    const proven = proof.outcome === 'proved' ? await store.findUserById(user.id) : undefined
    // The account's address changed (or it went) between the lookup and the proof: the code proves nothing of it now.
    if (proven === undefined || proven.email !== email) throw new InvalidEmailCodeError()
    const outcome = await completeSignIn({ user: proven, method: { kind: 'email_code' }, client })
    if (outcome.kind === 'second_factor') throw mfaRequired(outcome.mfaToken)
    // The owner showed its mailbox: a lockout that password guesses caused ends, as after a reset.
    await loginThrottle.succeeded(email)
    return { user: proven, session: outcome.session, created }
  }
}

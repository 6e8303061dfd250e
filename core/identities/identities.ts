import { currentDate, type Clock } from '../clock.js'
import { DuplicateValueError, IdentityTakenError, type AccountStore, type IdentityRecord, type UserRecord } from '../../db/store.js'
import type { Variant } from '../config.js'
import { withoutControlCharacters } from '../control-characters.js'
import { IdentityNotFoundError, InvalidCodeError, LastLoginMethodError } from '../errors.js'
import { signInMethodNotice } from '../mails.js'
import { candidateUsername } from '../oidc/usernames.js'
import { newLoginCode, providerOfLoginCode, verifierMatches } from '../oidc/login-code.js'
import { hashToken } from '../tokens/random-token.js'
import type { AccountLifecycle } from '../accounts/account.js'
import type { Actor } from '../sessions/actor.js'
import type { Mailer } from '../mail/mailer.js'
import type { ProviderClaims } from '../oidc/providers.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { Sessions } from '../sessions/sessions.js'
import type { Webhooks } from '../webhooks/webhooks.js'

/**
 * Why a provider sign-in found no account to sign in to; the browser is sent back with `#error=<reason>`.
 * email_required: the provider gave no email. email_not_verified: the provider does not say it verified the
 * email, which then neither makes an account nor opens one (whether one exists is not told).
 * identity_conflict: the account with the email has another identity at that provider.
 * account_exists: the address was registered while the sign-in made its account, twice over.
 */
export type SignInRefusal = 'email_required' | 'email_not_verified' | 'account_exists' | 'identity_conflict'

export class SignInRefusedError extends Error {
  readonly reason: SignInRefusal

  constructor (reason: SignInRefusal) {
    super(`provider sign-in refused: ${reason}`)
    this.reason = reason
    this.name = 'SignInRefusedError'
  }
}

export interface Identities {
  /**
   * The account of the provider's claims: the one linked to (provider, sub); else, only when the provider
   * says it verified the email, the one with that email (linked now; an account whose email was never
   * verified is claimed first: account.proveAddress (core/accounts/prove-address.ts), pre-hijacking; a verified one loses its password, passkeys
   * and sessions, which the one signing in never showed) or a new one without a password.
   * Throws SignInRefusedError.
   */
  accountFor (provider: string, claims: ProviderClaims, variant: Variant, client: Client): Promise<UserRecord>
  /**
   * A one-time code for POST /auth/oidc/exchange (header variant): single use, LOGIN_CODE_TTL_SECONDS,
   * bound to the PKCE code_challenge (S256) of the app that started the sign-in.
   */
  issueLoginCode (user: UserRecord, provider: string, codeChallenge: string): Promise<string>
  /**
   * The user (and provider) of a live code, which is used up; 400 INVALID_CODE for an unknown, used or
   * expired one, and for a missing or wrong verifier (the code is spent all the same: no second guess).
   */
  redeemLoginCode (code: string, codeVerifier: string | undefined): Promise<{ user: UserRecord, provider: string }>
  list (userId: number): Promise<IdentityRecord[]>
  /** 404 IDENTITY_NOT_FOUND, 409 LAST_LOGIN_METHOD, 403 REAUTHENTICATION_REQUIRED past REAUTH_MAX_AGE. */
  unlink (actor: Actor, provider: string): Promise<void>
}

export interface IdentitiesDependencies {
  store: Pick<AccountStore, 'findIdentity' | 'findUserById' | 'findUserByEmail' | 'createUserWithIdentity' |
    'issueOneTimeToken' | 'findOneTimeToken' | 'useOneTimeToken' | 'listIdentities' | 'unlinkIdentity'>
  clock: Clock
  sessions: Pick<Sessions, 'requireFresh'>
  securityEvents: Pick<SecurityEvents, 'record'>
  /** user.created for an account a provider sign-in makes, written with the account. */
  webhooks: Pick<Webhooks, 'userEvent' | 'wake'>
  account: Pick<AccountLifecycle, 'proveAddress'>
  mailer: Pick<Mailer, 'enqueue'>
}

export const LOGIN_CODE_TTL_SECONDS = 60
/** Attempts at a free username for a new account before the sign-in fails. */
const USERNAME_ATTEMPTS = 5
const NAME_MAX = 100

/** A claim without control characters (as names refuse them: core/schemas/common.ts), undefined when nothing is left. */
const readable = (claim: string | undefined) => withoutControlCharacters(claim ?? '').trim() || undefined

/** The provider's name for the person, within the contract's 1 to 100 characters. */
function namesOf (claims: ProviderClaims, email: string): { firstName: string, lastName: string } {
  const [nameFirst, ...nameRest] = (readable(claims.name) ?? '').split(/\s+/).filter(part => part !== '')
  const firstName = readable(claims.givenName) ?? nameFirst ?? email.split('@')[0]
  const lastName = readable(claims.familyName) ?? (nameRest.length > 0 ? nameRest.join(' ') : firstName)
  return { firstName: firstName.slice(0, NAME_MAX), lastName: lastName.slice(0, NAME_MAX) }
}

/**
 * Accounts and provider identities: who a provider sign-in signs in, the linking rules, the
 * header variant's one-time code, and the identities a user sees and unlinks. The sign-in itself
 * ends where every sign-in does: authentication.completeSignIn (core/authentication/complete-sign-in.ts).
 */
export function createIdentities ({ store, clock, sessions, securityEvents, account, mailer, webhooks }: IdentitiesDependencies): Identities {
  /**
   * Links the identity to an account found by a verified email. The account's address was proved just now:
   * one whose address nobody proved before is claimed from whoever registered it, in the same transaction
   * as the link, and only when the link can be made (identity_conflict changes nothing).
   */
  async function linkByEmail (user: UserRecord, provider: string, claims: ProviderClaims & { email: string }, client: Client): Promise<UserRecord | undefined> {
    const outcome = await account.proveAddress({ userId: user.id, email: claims.email, identity: { provider, subject: claims.subject, email: claims.email } }, client)
    if (outcome.outcome === 'identity_conflict') throw new SignInRefusedError('identity_conflict')
    // The address changed (or the account went) since it was found: judge again.
    if (outcome.outcome === 'email_changed') return undefined
    const passwordCleared = outcome.claimed?.passwordCleared ?? false
    await securityEvents.record('identity_linked', client, { userId: user.id, detail: { provider, email: claims.email, password_cleared: passwordCleared } })
    await mailer.enqueue(signInMethodNotice(claims.email, { kind: 'identity_linked', provider, passwordCleared }, currentDate(clock), client))
    return await store.findUserById(user.id)
  }

  async function createAccount (provider: string, claims: ProviderClaims & { email: string }, variant: Variant, client: Client): Promise<UserRecord | undefined> {
    const names = namesOf(claims, claims.email)
    for (let attempt = 0; ; attempt++) {
      const username = variant === 'cookie' ? candidateUsername(claims.preferredUsername, claims.email, attempt) : null
      try {
        const now = currentDate(clock)
        // Only a verified email makes an account (accountFor): the provider proved the address. The account, its
        // identity and its user.created event are written in one transaction.
        const created = await store.createUserWithIdentity({ ...names, username, email: claims.email, passwordHash: null, emailVerified: true },
          { provider, subject: claims.subject, email: claims.email }, now, webhooks.userEvent('user.created'))
        webhooks.wake()
        await securityEvents.record('identity_linked', client, { userId: created.id, detail: { provider, email: claims.email, new_account: true } })
        return created
      } catch (error) {
        if (error instanceof DuplicateValueError && error.field === 'username' && attempt + 1 < USERNAME_ATTEMPTS) continue
        // The address was registered meanwhile: accountFor judges again with what the store now holds.
        if (error instanceof DuplicateValueError && error.field === 'email') return undefined
        throw error
      }
    }
  }

  /** One judgement of accountFor; undefined when the store changed under it (judge again). */
  async function accountOnce (provider: string, claims: ProviderClaims, variant: Variant, client: Client): Promise<UserRecord | undefined> {
    const linked = await store.findIdentity(provider, claims.subject)
    if (linked !== undefined) {
      const user = await store.findUserById(linked.userId)
      if (user !== undefined) return user
    }
    if (claims.email === undefined) throw new SignInRefusedError('email_required')
    // An address the provider did not verify proves nothing: it neither makes an account nor opens one,
    // and the refusal is the same whether an account holds it or not.
    if (!claims.emailVerified) throw new SignInRefusedError('email_not_verified')
    const withEmail = { ...claims, email: claims.email }
    const existing = await store.findUserByEmail(claims.email)
    if (existing !== undefined) return await linkByEmail(existing, provider, withEmail, client)
    try {
      return await createAccount(provider, withEmail, variant, client)
    } catch (error) {
      // A parallel callback of the same identity created the account first: sign in to it.
      if (!(error instanceof IdentityTakenError)) throw error
      const winner = await store.findIdentity(provider, claims.subject)
      const user = winner === undefined ? undefined : await store.findUserById(winner.userId)
      if (user === undefined) throw error
      return user
    }
  }

  return {
    async accountFor (provider, claims, variant, client) {
      // Twice at most: an account registered or changed between the look-up and the write is judged again once.
      for (let attempt = 0; attempt < 2; attempt++) {
        const user = await accountOnce(provider, claims, variant, client)
        if (user !== undefined) return user
      }
      throw new SignInRefusedError('account_exists')
    },

    async issueLoginCode (user, provider, codeChallenge) {
      const now = currentDate(clock)
      // The provider's name and the binding to the challenge ride in the code; the stored hash covers them, so neither can be altered.
      const code = newLoginCode(provider, codeChallenge)
      await store.issueOneTimeToken({
        tokenHash: hashToken(code),
        userId: user.id,
        purpose: 'oidc_login',
        email: user.email,
        expiresAt: new Date(now.getTime() + LOGIN_CODE_TTL_SECONDS * 1000)
      }, now, { liveLimit: 3 })
      return code
    },

    async redeemLoginCode (code, codeVerifier) {
      const now = currentDate(clock)
      const record = await store.findOneTimeToken(hashToken(code))
      if (record === undefined || record.purpose !== 'oidc_login' || record.usedAt !== null || record.expiresAt <= now) throw new InvalidCodeError()
      // Conditional on its being unused: of two exchanges of one code, one wins.
      if (!await store.useOneTimeToken(record.tokenHash, now)) throw new InvalidCodeError()
      // Spent above whatever the verifier: whoever holds a code someone else's app asked for gets one try, which fails.
      if (!verifierMatches(code, codeVerifier)) throw new InvalidCodeError()
      const user = await store.findUserById(record.userId)
      if (user === undefined) throw new InvalidCodeError()
      return { user, provider: providerOfLoginCode(code) }
    },

    list: (userId) => store.listIdentities(userId),

    async unlink ({ user, sessionId, client }, provider) {
      // Removing a way in is what a session thief would do to keep the account: it needs a recent proof.
      await sessions.requireFresh(sessionId)
      const outcome = await store.unlinkIdentity(user.id, provider)
      if (outcome === 'not_found') throw new IdentityNotFoundError()
      if (outcome === 'last_login_method') throw new LastLoginMethodError()
      await securityEvents.record('identity_unlinked', client, { userId: user.id, sessionId, detail: { provider } })
    }
  }
}

import fp from 'fastify-plugin'
import { DuplicateValueError, IdentityTakenError, type IdentityRecord, type UserRecord } from '../../db/store.js'
import type { Variant } from '../../src/config.js'
import { withoutControlCharacters } from '../../src/control-characters.js'
import { IdentityNotFoundError, InvalidCodeError, LastLoginMethodError } from '../../src/errors.js'
import { candidateUsername } from '../../src/oidc/usernames.js'
import { hashOneTimeToken, newOneTimeToken } from '../../src/tokens/one-time-token.js'
import type { Actor } from './account.js'
import type { ProviderClaims } from './oidc.js'
import type { Client } from './security-events.js'
import type { StartedSession } from './sessions.js'

declare module 'fastify' {
  interface FastifyInstance {
    identities: Identities
  }
}

/**
 * Why a provider sign-in found no account to sign in to; the browser is sent back with `#error=<reason>`.
 * email_required: the provider gave no email. account_exists: an account holds the email and the
 * provider does not say it verified it. identity_conflict: the account has another identity at that provider.
 */
export type SignInRefusal = 'email_required' | 'account_exists' | 'identity_conflict'

export class SignInRefusedError extends Error {
  constructor (readonly reason: SignInRefusal) {
    super(`provider sign-in refused: ${reason}`)
    this.name = 'SignInRefusedError'
  }
}

/**
 * What a provider sign-in ends in: a session, or, for an account with TOTP (the provider is the
 * first factor only), an `mfa_token` for POST /auth/mfa/verify: the routes answer 403 MFA_REQUIRED
 * with it (exchange) or send the browser back with `#mfa_token=` (cookie callback).
 */
export type SignInOutcome = { kind: 'session', session: StartedSession } | { kind: 'second_factor', mfaToken: string }

export interface Identities {
  /**
   * The account of the provider's claims: the one linked to (provider, sub); else the one with the
   * email when the provider says it verified the email (linked now; an account whose email was
   * never verified first loses its password and sessions: pre-hijacking); else a new one without a
   * password. Throws SignInRefusedError.
   */
  accountFor (provider: string, claims: ProviderClaims, variant: Variant, client: Client): Promise<UserRecord>
  /** The one place that decides what a provider sign-in yields: a session, or a second factor to ask for. Records the login. */
  signIn (user: UserRecord, provider: string, client: Client): Promise<SignInOutcome>
  /** A one-time code for POST /auth/oidc/exchange (header variant): single use, LOGIN_CODE_TTL_SECONDS. */
  issueLoginCode (user: UserRecord, provider: string): Promise<string>
  /** The user (and provider) of a live code, which is used up; 400 INVALID_CODE for an unknown, used or expired one. */
  redeemLoginCode (code: string): Promise<{ user: UserRecord, provider: string }>
  list (userId: number): Promise<IdentityRecord[]>
  /** 404 IDENTITY_NOT_FOUND, 409 LAST_LOGIN_METHOD, 403 REAUTHENTICATION_REQUIRED past REAUTH_MAX_AGE. */
  unlink (actor: Actor, provider: string): Promise<void>
}

export const LOGIN_CODE_TTL_SECONDS = 60
/** Attempts at a free username for a new account before the sign-in fails. */
const USERNAME_ATTEMPTS = 5
const NAME_MAX = 100

/** A claim without control characters (as names refuse them: src/schemas/common.ts), undefined when nothing is left. */
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
 * header variant's one-time code, and the identities a user sees and unlinks.
 */
export default fp(async (fastify) => {
  const { store, sessions, securityEvents, account, mfa } = fastify

  /** Links the identity to an account found by a verified email, after taking the account from whoever registered the address without owning it. */
  async function linkByEmail (user: UserRecord, provider: string, claims: ProviderClaims & { email: string }, client: Client): Promise<UserRecord> {
    const now = new Date()
    const unverified = !user.emailVerified
    if (unverified) {
      // Nobody proved this address before; the provider just did. Whoever set the password may not own it.
      await store.setPasswordHash(user.id, null, now)
      await store.voidOneTimeTokens(user.id, now)
      await sessions.endAll(user.id, client)
      await store.markEmailVerified(user.id, claims.email, now)
    }
    if (!await store.linkIdentity({ provider, subject: claims.subject, userId: user.id, email: claims.email }, now)) {
      // Another request linked this very identity first, or the account has another one at this provider.
      const linked = await store.findIdentity(provider, claims.subject)
      if (linked?.userId === user.id) return user
      throw new SignInRefusedError('identity_conflict')
    }
    await securityEvents.record('identity_linked', client, { userId: user.id, detail: { provider, email: claims.email, password_cleared: unverified } })
    return await store.findUserById(user.id) ?? user
  }

  async function createAccount (provider: string, claims: ProviderClaims & { email: string }, variant: Variant, client: Client): Promise<UserRecord> {
    const names = namesOf(claims, claims.email)
    for (let attempt = 0; ; attempt++) {
      const username = variant === 'cookie' ? candidateUsername(claims.preferredUsername, claims.email, attempt) : null
      try {
        const now = new Date()
        const user = await store.createUserWithIdentity({ ...names, username, email: claims.email, passwordHash: null },
          { provider, subject: claims.subject, email: claims.email }, now)
        await securityEvents.record('identity_linked', client, { userId: user.id, detail: { provider, email: claims.email, new_account: true } })
        if (claims.emailVerified) {
          await store.markEmailVerified(user.id, claims.email, now)
          return await store.findUserById(user.id) ?? user
        }
        account.sendVerificationMail(user)
        return user
      } catch (error) {
        if (error instanceof DuplicateValueError && error.field === 'username' && attempt + 1 < USERNAME_ATTEMPTS) continue
        // The address was registered meanwhile (or a parallel sign-in won): judge again with what the store now holds.
        if (error instanceof DuplicateValueError && error.field === 'email') throw new SignInRefusedError('account_exists')
        throw error
      }
    }
  }

  const identities: Identities = {
    async accountFor (provider, claims, variant, client) {
      const linked = await store.findIdentity(provider, claims.subject)
      if (linked !== undefined) {
        const user = await store.findUserById(linked.userId)
        if (user !== undefined) return user
      }
      if (claims.email === undefined) throw new SignInRefusedError('email_required')
      const withEmail = { ...claims, email: claims.email }
      const existing = await store.findUserByEmail(claims.email)
      if (existing !== undefined) {
        // An address the provider did not verify proves nothing: it never opens an existing account.
        if (!claims.emailVerified) throw new SignInRefusedError('account_exists')
        return await linkByEmail(existing, provider, withEmail, client)
      }
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
    },

    async signIn (user, provider, client) {
      // With TOTP on, the provider is the first factor only: no session before the code.
      if (await mfa.isRequired(user.id)) return { kind: 'second_factor', mfaToken: await mfa.challenge(user.id) }
      const session = await sessions.start(user.id, client)
      await securityEvents.record('login', client, { userId: user.id, sessionId: session.sessionId, detail: { method: 'oidc', provider } })
      return { kind: 'session', session }
    },

    async issueLoginCode (user, provider) {
      const now = new Date()
      // The provider's name rides in the code for the login event; the stored hash covers it, so it cannot be altered.
      const code = `${provider}.${newOneTimeToken()}`
      await store.issueOneTimeToken({
        tokenHash: hashOneTimeToken(code),
        userId: user.id,
        purpose: 'oidc_login',
        email: user.email,
        expiresAt: new Date(now.getTime() + LOGIN_CODE_TTL_SECONDS * 1000)
      }, now, { liveLimit: 3 })
      return code
    },

    async redeemLoginCode (code) {
      const now = new Date()
      const record = await store.findOneTimeToken(hashOneTimeToken(code))
      if (record === undefined || record.purpose !== 'oidc_login' || record.usedAt !== null || record.expiresAt <= now) throw new InvalidCodeError()
      // Conditional on its being unused: of two exchanges of one code, one wins.
      if (!await store.useOneTimeToken(record.tokenHash, now)) throw new InvalidCodeError()
      const user = await store.findUserById(record.userId)
      if (user === undefined) throw new InvalidCodeError()
      return { user, provider: code.slice(0, code.indexOf('.')) }
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
  fastify.decorate('identities', identities)
}, { name: 'identities', dependencies: ['store', 'sessions', 'security-events', 'account', 'mfa'] })

import type { Configuration } from 'oidc-provider'
import type { UserRecord } from '../../db/store.js'
import type { Variant } from '../config.js'
import type { KeptUser } from '../users/user-cache.js'

/*
 * What the provider says of a user: its `sub` (the user id) and the claims of each scope, in ID tokens
 * (findAccount, core/oauth/provider.ts) and at userinfo (core/oauth/structured-tokens.ts, from the user cache).
 */

/** The claims of each scope; preferred_username only where usernames exist (the cookie variant). */
export function claimsOf (variant: Variant): NonNullable<Configuration['claims']> {
  return {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: variant === 'cookie' ? ['given_name', 'family_name', 'preferred_username'] : ['given_name', 'family_name']
  }
}

/** The user id a `sub` names; undefined for anything that is not one. */
export function userIdOf (sub: string): number | undefined {
  const id = Number(sub)
  return /^[1-9][0-9]*$/.test(sub) && Number.isSafeInteger(id) ? id : undefined
}

export interface UserClaims {
  /** Every claim of the user: `sub` and each scope's. */
  ofUser (user: Pick<UserRecord, 'id' | 'email' | 'emailVerified' | 'firstName' | 'lastName' | 'username'>): Record<string, unknown> & { sub: string }
  /** A kept user's claims for these scopes: `sub` and each scope's (claimsOf). */
  forScopes (kept: KeptUser, scopes: Set<string>): Record<string, unknown>
}

export function userClaims (variant: Variant): UserClaims {
  const scopeClaims = claimsOf(variant) as Record<string, string[]>
  function ofUser (user: Parameters<UserClaims['ofUser']>[0]): Record<string, unknown> & { sub: string } {
    return {
      sub: String(user.id),
      email: user.email,
      email_verified: user.emailVerified,
      given_name: user.firstName,
      family_name: user.lastName,
      ...(variant === 'cookie' && user.username !== null ? { preferred_username: user.username } : {})
    }
  }
  return {
    ofUser,
    forScopes (kept, scopes) {
      const claims = ofUser({ ...kept.shown, emailVerified: kept.emailVerified })
      const answer: Record<string, unknown> = { sub: claims.sub }
      for (const scope of scopes) {
        const names = Object.hasOwn(scopeClaims, scope) ? scopeClaims[scope] : []
        for (const name of names) if (claims[name] !== undefined) answer[name] = claims[name]
      }
      return answer
    }
  }
}

import { Type, type Static, type TObject, type TOptional, type TSchema } from '@sinclair/typebox'
import type { UserRecord } from '../../db/store.js'
import type { Variant } from '../config.js'
import type { KeptUser } from '../users/user-cache.js'
import { OrganisationClaimSchema } from '../schemas/active-organisation.js'

/*
 * What the provider says of a user: its `sub` (the user id) and the claims of each scope, in ID tokens
 * (findAccount, core/oauth/provider.ts) and at userinfo (core/oauth/structured-tokens.ts, from the user cache).
 */

/**
 * Every claim the provider says of a user, and its JSON type: the scopes (claimsOf) can name only these, and
 * userinfo's answer schema (userinfoAnswerSchema) is made of them.
 */
const CLAIM_TYPES = {
  sub: Type.String(),
  email: Type.String(),
  email_verified: Type.Boolean(),
  given_name: Type.String(),
  family_name: Type.String(),
  preferred_username: Type.String(),
  /** Every membership of the user (the `organizations` scope), read from the store when a token or userinfo asks for it. */
  organizations: Type.Array(OrganisationClaimSchema)
}

export type ClaimName = keyof typeof CLAIM_TYPES

/** The scope whose claim is the user's memberships: not in the user record, so read apart (organizationsClaim). */
export const ORGANIZATIONS_SCOPE = 'organizations'

/** The claims of each scope; preferred_username only where usernames exist (the cookie variant). */
export function claimsOf (variant: Variant): Record<'openid' | 'email' | 'profile' | typeof ORGANIZATIONS_SCOPE, ClaimName[]> {
  return {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: variant === 'cookie' ? ['given_name', 'family_name', 'preferred_username'] : ['given_name', 'family_name'],
    [ORGANIZATIONS_SCOPE]: ['organizations']
  }
}

/** A user's claims: `sub` always, the others where the user has them. */
type Claims = { sub: string } & { [Name in Exclude<ClaimName, 'sub'>]?: Static<(typeof CLAIM_TYPES)[Name]> }

export type OrganizationsClaim = Static<typeof CLAIM_TYPES.organizations>

/** The `organizations` claim of a user's memberships (db/store/organisations.ts): an empty array when it has none. */
export async function organizationsClaim (
  memberships: { membershipsOfUser (userId: number): Promise<Array<{ orgId: number, slug: string, role: string }>> },
  userId: number
): Promise<OrganizationsClaim> {
  return (await memberships.membershipsOfUser(userId)).map(({ orgId, slug, role }) => ({ id: orgId, slug, role }))
}

/**
 * What userinfo answers for a variant: `sub`, and the claims its scopes name (claimsOf), each optional (a token
 * carries only its scopes'). A claim added to a scope later is answered, not dropped.
 */
export function userinfoAnswerSchema (variant: Variant): TObject<Record<string, TSchema>> {
  const properties: Record<string, TSchema | TOptional<TSchema>> = {}
  for (const name of Object.values(claimsOf(variant)).flat()) {
    properties[name] = name === 'sub' ? CLAIM_TYPES[name] : Type.Optional(CLAIM_TYPES[name])
  }
  return Type.Object(properties, { additionalProperties: true })
}

/** The user id a `sub` names; undefined for anything that is not one. */
export function userIdOf (sub: string): number | undefined {
  const id = Number(sub)
  return /^[1-9][0-9]*$/.test(sub) && Number.isSafeInteger(id) ? id : undefined
}

export interface UserClaims {
  /** Every claim of the user: `sub` and each scope's. */
  ofUser (user: Pick<UserRecord, 'id' | 'email' | 'emailVerified' | 'firstName' | 'lastName' | 'username'>): Claims
  /** A kept user's claims for these scopes: `sub` and each scope's (claimsOf). */
  forScopes (kept: KeptUser, scopes: ReadonlySet<string>): Record<string, unknown>
  /**
   * forScopes, frozen and kept for as long as both the kept user and the scopes set live: the same object for
   * every userinfo of one token while its user is unchanged (a changed user is a new KeptUser).
   */
  keptForScopes (kept: KeptUser, scopes: ReadonlySet<string>): Readonly<Record<string, unknown>>
}

export function userClaims (variant: Variant): UserClaims {
  const scopeClaims: Record<string, ClaimName[]> = claimsOf(variant)
  function ofUser (user: Parameters<UserClaims['ofUser']>[0]): Claims {
    return {
      sub: String(user.id),
      email: user.email,
      email_verified: user.emailVerified,
      given_name: user.firstName,
      family_name: user.lastName,
      ...(variant === 'cookie' && user.username !== null ? { preferred_username: user.username } : {})
    }
  }
  function forScopes (kept: KeptUser, scopes: ReadonlySet<string>): Record<string, unknown> {
    const claims = ofUser({ ...kept.shown, emailVerified: kept.emailVerified })
    const answer: Record<string, unknown> = { sub: claims.sub }
    for (const scope of scopes) {
      const names = Object.hasOwn(scopeClaims, scope) ? scopeClaims[scope] : []
      for (const name of names) if (claims[name] !== undefined) answer[name] = claims[name]
    }
    return answer
  }
  // Weak both ways: an answer goes when its user is read again (or dropped) or its token's claims are forgotten.
  const answers = new WeakMap<KeptUser, WeakMap<ReadonlySet<string>, Readonly<Record<string, unknown>>>>()
  return {
    ofUser,
    forScopes,
    keptForScopes (kept, scopes) {
      let ofKept = answers.get(kept)
      if (ofKept === undefined) answers.set(kept, ofKept = new WeakMap())
      let answer = ofKept.get(scopes)
      if (answer === undefined) ofKept.set(scopes, answer = Object.freeze(forScopes(kept, scopes)))
      return answer
    }
  }
}

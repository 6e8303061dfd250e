import { Type, type Static } from '@sinclair/typebox'

/** `:orgId` in the organisation routes: a positive integer, as user ids are. */
export const OrgIdParams = Type.Object({
  orgId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The organisation\'s id' })
}, { additionalProperties: false })

/**
 * An organisation as a token claims it, with the user's role in it: the access token's `org` (the session's active
 * one, core/tokens/access-tokens.ts) and each of the `organizations` claim an app gets (core/oauth/user-claims.ts).
 */
export const OrganisationClaimSchema = Type.Object({ id: Type.Integer(), slug: Type.String(), role: Type.String() })
export type OrganisationClaim = Static<typeof OrganisationClaimSchema>

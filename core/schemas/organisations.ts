import { Type, type Static } from '@sinclair/typebox'
import { ORG_ROLES, type InvitationRecord, type InvitationWithOrganisation, type MemberRecord, type MembershipSummary, type OrganisationRecord, type OrgRole } from '../../db/store.js'
import { Email, Id, MAX_ID, Name, Token } from './common.js'

/* The bodies and answers of /orgs and /invitations (docs/organisations.md). */

/** An organisation's slug: 3 to 40 of a-z, 0-9 and '-'. */
export const SLUG_MIN_LENGTH = 3
export const SLUG_MAX_LENGTH = 40
export const SLUG_PATTERN = '^[a-z0-9-]{3,40}$'

export const OrgRoleField = Type.Union(ORG_ROLES.map((role) => Type.Literal(role)), { description: 'owner, admin or member' })
export const Slug = Type.String({
  minLength: SLUG_MIN_LENGTH,
  maxLength: SLUG_MAX_LENGTH,
  pattern: SLUG_PATTERN,
  description: `${SLUG_MIN_LENGTH} to ${SLUG_MAX_LENGTH} of a-z, 0-9 and -; unique across organisations`
})
const OrgName = Type.String({ ...Name, description: 'The organisation\'s name: 1 to 100 characters after trimming, no control characters' })

const PathId = Type.Integer({ minimum: 1, maximum: MAX_ID })
export const OrgParams = Type.Object({ orgId: PathId }, { additionalProperties: false })
export const MemberParams = Type.Object({ orgId: PathId, userId: PathId }, { additionalProperties: false })
export const InvitationParams = Type.Object({ orgId: PathId, id: PathId }, { additionalProperties: false })

export const CreateOrgBody = Type.Object({
  name: OrgName,
  slug: Type.Optional(Type.String({ ...Slug, description: `${Slug.description}; derived from the name when absent` }))
}, { additionalProperties: false })
export const UpdateOrgBody = Type.Object({ name: Type.Optional(OrgName), slug: Type.Optional(Slug) }, { additionalProperties: false, minProperties: 1 })
export const ChangeRoleBody = Type.Object({ role: OrgRoleField }, { additionalProperties: false })
export const InviteBody = Type.Object({ email: Email, role: OrgRoleField }, { additionalProperties: false })
export const AcceptInvitationBody = Type.Object({ token: Type.String({ ...Token, minLength: 1, maxLength: 200, description: 'The token of the mailed link (#token=…)' }) }, { additionalProperties: false })

export const OrgView = Type.Object({ id: Id, name: Type.String(), slug: Type.String(), role: OrgRoleField }, { additionalProperties: false })
export const CreatedOrgView = Type.Object({ ...OrgView.properties, created_at: Type.String({ format: 'date-time' }) }, { additionalProperties: false })
export const OrgsResponse = Type.Object({ orgs: Type.Array(OrgView) }, { additionalProperties: false })
export const MemberView = Type.Object({
  user_id: Id,
  email: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  role: OrgRoleField,
  joined_at: Type.String({ format: 'date-time' })
}, { additionalProperties: false })
export const MembersResponse = Type.Object({ members: Type.Array(MemberView) }, { additionalProperties: false })
export const InvitationView = Type.Object({
  id: Id,
  email: Type.String(),
  role: OrgRoleField,
  expires_at: Type.String({ format: 'date-time' })
}, { additionalProperties: false })
export const InvitationsResponse = Type.Object({ invitations: Type.Array(InvitationView) }, { additionalProperties: false })
/** What the invitation page shows before any sign-in (POST /invitations/preview): the token's own invitation, nothing more. */
export const InvitationPreviewResponse = Type.Object({
  org: Type.Object({ name: Type.String(), slug: Type.String() }, { additionalProperties: false }),
  inviter: Type.Union([Type.Object({ name: Type.String() }, { additionalProperties: false }), Type.Null()], { description: 'Who invited; null once that account is deleted' }),
  email: Type.String({ description: 'The invited address: only its account can accept' }),
  role: OrgRoleField,
  expires_at: Type.String({ format: 'date-time' })
}, { additionalProperties: false })
export const AcceptedInvitationResponse = Type.Object({ org: OrgView }, { additionalProperties: false })

export function presentOrg (org: Pick<OrganisationRecord, 'id' | 'name' | 'slug'>, role: OrgRole): Static<typeof OrgView> {
  return { id: org.id, name: org.name, slug: org.slug, role }
}

export function presentMembership (membership: MembershipSummary): Static<typeof OrgView> {
  return { id: membership.orgId, name: membership.name, slug: membership.slug, role: membership.role }
}

export function presentMember (member: MemberRecord): Static<typeof MemberView> {
  return { user_id: member.userId, email: member.email, first_name: member.firstName, last_name: member.lastName, role: member.role, joined_at: member.joinedAt.toISOString() }
}

export function presentInvitation (invitation: InvitationRecord): Static<typeof InvitationView> {
  return { id: invitation.id, email: invitation.email, role: invitation.role, expires_at: invitation.expiresAt.toISOString() }
}

export function presentInvitationPreview (invitation: InvitationWithOrganisation): Static<typeof InvitationPreviewResponse> {
  return {
    org: { name: invitation.orgName, slug: invitation.orgSlug },
    inviter: invitation.inviterName === null ? null : { name: invitation.inviterName },
    email: invitation.email,
    role: invitation.role,
    expires_at: invitation.expiresAt.toISOString()
  }
}

import { Type, type Static } from '@sinclair/typebox'
import type { MemberRecord, OrganisationSummary } from '../../db/store.js'
import { ORG_ROLES } from '../../db/store.js'
import { NO_CONTROL_CHARACTERS } from '../control-characters.js'
import { ADMIN_PAGE, ADMIN_PAGE_MAX } from './admin.js'
import { Id } from './common.js'

const DateTime = Type.String({ format: 'date-time' })
const OrgRoleSchema = Type.Union(ORG_ROLES.map(role => Type.Literal(role)), { description: '`owner`, `admin` or `member`' })

/** GET /admin/orgs: the users' search idiom (GET /admin/users): a query, a page size and the previous page's cursor. */
export const AdminOrgsQuery = Type.Object({
  query: Type.Optional(Type.String({ maxLength: 254, pattern: NO_CONTROL_CHARACTERS, description: 'Part of a name or a slug; case is ignored' })),
  limit: Type.Integer({ minimum: 1, maximum: ADMIN_PAGE_MAX, default: ADMIN_PAGE }),
  // At most MAX_ID, which the route checks (a pattern cannot say it simply).
  cursor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,9}$', description: 'The `next_cursor` of the previous page' }))
}, { additionalProperties: false })

export const AdminOrg = Type.Object({
  id: Id,
  name: Type.String(),
  slug: Type.String(),
  member_count: Type.Integer({ minimum: 0 }),
  created_at: DateTime
}, { additionalProperties: false })

export const AdminOrgsResponse = Type.Object({
  orgs: Type.Array(AdminOrg),
  next_cursor: Type.Union([Type.String({ description: 'Pass as `cursor` for the next page; null on the last page' }), Type.Null()])
}, { additionalProperties: false })

export const AdminOrgParams = Type.Object({ orgId: Id }, { additionalProperties: false })

const AdminOrgMember = Type.Object({
  user_id: Id,
  email: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  role: OrgRoleSchema,
  joined_at: DateTime
}, { additionalProperties: false })

export const AdminOrgDetails = Type.Object({
  ...AdminOrg.properties,
  updated_at: DateTime,
  members: Type.Array(AdminOrgMember)
}, { additionalProperties: false })

export function presentAdminOrg (org: OrganisationSummary): Static<typeof AdminOrg> {
  return { id: org.id, name: org.name, slug: org.slug, member_count: org.memberCount, created_at: org.createdAt.toISOString() }
}

export function presentAdminOrgDetails (org: OrganisationSummary & { updatedAt: Date }, members: MemberRecord[]): Static<typeof AdminOrgDetails> {
  return {
    ...presentAdminOrg(org),
    updated_at: org.updatedAt.toISOString(),
    members: members.map(member => ({
      user_id: member.userId,
      email: member.email,
      first_name: member.firstName,
      last_name: member.lastName,
      role: member.role,
      joined_at: member.joinedAt.toISOString()
    }))
  }
}

import type { ActiveMembership } from './store.js'

/** The active membership of a refresh token's row (both backends' lookup): null unless the membership holds. */
export function activeMembershipOf (row: { activeOrgSlug: string | null, activeOrgRole: string | null }): ActiveMembership | null {
  return row.activeOrgSlug === null || row.activeOrgRole === null ? null : { slug: row.activeOrgSlug, role: row.activeOrgRole }
}

/**
 * The active membership a rotation read as one text, `<slug> <role>` (db/sqlite/queries.ts, db/postgres/sessions.ts):
 * neither a slug ([a-z0-9-]) nor a role holds a space. Null when no membership holds.
 */
export function parseActiveMembership (text: string | null): ActiveMembership | null {
  if (text === null) return null
  const space = text.indexOf(' ')
  return { slug: text.slice(0, space), role: text.slice(space + 1) }
}

import type { OrgRole } from '../../db/store.js'

/*
 * Who may do what in an organisation (docs/organisations.md): pure rules, each answering the refusal's reason
 * (403 ORG_FORBIDDEN) or undefined when allowed. Whether the act would leave no owner (409 LAST_OWNER) is the
 * store's to say, in the transaction that writes.
 */

const MANAGERS: readonly OrgRole[] = ['owner', 'admin']

/** Renaming, listing and withdrawing invitations: an owner or an admin. */
export function refusalToManage (actor: OrgRole): string | undefined {
  return MANAGERS.includes(actor) ? undefined : 'Only an owner or an admin of the organisation may do this'
}

/** Deleting the organisation: an owner. */
export function refusalToDelete (actor: OrgRole): string | undefined {
  return actor === 'owner' ? undefined : 'Only an owner may delete the organisation'
}

/** Inviting with a role: an owner or an admin, and only an owner invites an owner. */
export function refusalToInvite (actor: OrgRole, role: OrgRole): string | undefined {
  return refusalToManage(actor) ?? (role === 'owner' && actor !== 'owner' ? 'Only an owner may invite an owner' : undefined)
}

/** Giving a member another role: an owner or an admin, and only an owner gives or takes the owner role. */
export function refusalToChangeRole (actor: OrgRole, current: OrgRole, next: OrgRole): string | undefined {
  return refusalToManage(actor) ??
    ((current === 'owner' || next === 'owner') && actor !== 'owner' ? 'Only an owner may give or take the owner role' : undefined)
}

/** Removing a member: anyone may remove itself (leave); else an owner or an admin, and only an owner removes an owner. */
export function refusalToRemove (actor: OrgRole, target: OrgRole, self: boolean): string | undefined {
  if (self) return undefined
  return refusalToManage(actor) ?? (target === 'owner' && actor !== 'owner' ? 'Only an owner may remove an owner' : undefined)
}

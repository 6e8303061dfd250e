import type { SecurityEventWrite } from './events.js'
import type { MailMessage } from './outbox.js'

/** A member's role in an organisation, strongest first. */
export const ORG_ROLES = ['owner', 'admin', 'member'] as const
export type OrgRole = typeof ORG_ROLES[number]

/** An organisation (a customer, a team): its members and invitations hang off it and go with it. */
export interface OrganisationRecord {
  id: number
  name: string
  /** 3–40 of [a-z0-9-], unique across organisations. */
  slug: string
  createdAt: Date
  updatedAt: Date
}

/** An operator's search (GET /admin/orgs): `query` in the name or slug, in id order after `afterId`, `limit` at a time. */
export interface OrganisationSearch {
  query?: string
  limit: number
  afterId?: number
}

/** An organisation as the operators' list shows it: with how many members it has. */
export interface OrganisationSummary extends OrganisationRecord {
  memberCount: number
}

/** One of a user's memberships, with its organisation's name and slug (GET /orgs, the token's claims). */
export interface MembershipSummary {
  orgId: number
  slug: string
  name: string
  role: OrgRole
}

export interface MembershipRecord {
  orgId: number
  userId: number
  role: OrgRole
  joinedAt: Date
}

/** One membership with its organisation's slug: what the token's `org` claim shows of it. */
export interface MembershipWithSlug extends MembershipRecord {
  slug: string
}

/** A member as GET /orgs/:orgId/members shows it. */
export interface MemberRecord extends MembershipRecord {
  email: string
  firstName: string
  lastName: string
}

/** A mailed invitation to join an organisation with a role: single use, stored as the SHA-256 of its token. */
export interface InvitationRecord {
  id: number
  orgId: number
  /** The invited address: only the account with this address accepts it. */
  email: string
  role: OrgRole
  tokenHash: string
  /** Who invited; null once that user is deleted. */
  invitedBy: number | null
  createdAt: Date
  expiresAt: Date
  /** When it was accepted; null while pending. */
  usedAt: Date | null
  /** When an owner or admin withdrew it; null unless withdrawn. */
  withdrawnAt: Date | null
}

export type NewInvitation = Pick<InvitationRecord, 'orgId' | 'email' | 'role' | 'tokenHash' | 'invitedBy' | 'expiresAt'>

/** A pending invitation found by its token, with what the page and the acceptance show of it. */
export interface InvitationWithOrganisation extends InvitationRecord {
  orgName: string
  orgSlug: string
  /** The inviter's name, while that user exists. */
  inviterName: string | null
}

/** The events of a change, built from what it wrote, stored in its transaction (db/store/events.ts). */
export type OrgAuditOf<Written> = (written: Written) => SecurityEventWrite[]

/** What a role change or a removal did: `last_owner` when it would have left no owner (nothing written). */
export type MembershipChange =
  | { outcome: 'changed', previous: MembershipRecord }
  | { outcome: 'not_member' }
  | { outcome: 'last_owner' }

/** What accepting an invitation did. `mismatch` and `invalid` write nothing (a mismatch leaves it usable). */
export type InvitationAcceptance =
  | { outcome: 'invalid' }
  | { outcome: 'mismatch' }
  /** `added` is false when the user was a member already: its role is unchanged, the invitation used. */
  | { outcome: 'accepted', org: OrganisationRecord, role: OrgRole, added: boolean, invitation: InvitationRecord }

/**
 * Organisations, their memberships and invitations. Every check that keeps an organisation with an owner runs
 * in the transaction that writes (the organisation's row locked), so two owners demoting each other at once
 * leave one.
 */
export interface OrganisationsStore {
  /** A new organisation with `ownerId` its owner, in one transaction with its events; a taken slug throws DuplicateSlugError. */
  createOrganisation (org: { name: string, slug: string, ownerId: number }, now: Date, audit?: OrgAuditOf<OrganisationRecord>): Promise<OrganisationRecord>
  findOrganisation (orgId: number): Promise<OrganisationRecord | undefined>
  /** Renames it or changes its slug; undefined when it is gone; a taken slug throws DuplicateSlugError. */
  updateOrganisation (orgId: number, changes: { name?: string, slug?: string }, now: Date): Promise<OrganisationRecord | undefined>
  /** Deletes it with its memberships and invitations, and writes `audit` in that transaction; false when it was gone. */
  deleteOrganisation (orgId: number, audit?: SecurityEventWrite[]): Promise<boolean>
  /** The user's memberships, oldest first. */
  membershipsOfUser (userId: number): Promise<MembershipSummary[]>
  /** The user's membership of the organisation, with the organisation's slug; undefined for a non-member. */
  membershipOf (orgId: number, userId: number): Promise<MembershipWithSlug | undefined>
  /** The members with their names and addresses, oldest first. */
  listMembers (orgId: number): Promise<MemberRecord[]>
  /** Sets a member's role; refused (`last_owner`) when it takes the role of the only owner. */
  changeMemberRole (orgId: number, userId: number, role: OrgRole, now: Date, audit?: OrgAuditOf<MembershipRecord>): Promise<MembershipChange>
  /** Removes a member; refused (`last_owner`) for the only owner. */
  removeMember (orgId: number, userId: number, audit?: OrgAuditOf<MembershipRecord>): Promise<MembershipChange>
  /** Stores an invitation and, in the same transaction, the mail carrying its link. */
  createInvitation (invitation: NewInvitation, now: Date, mail: MailMessage): Promise<InvitationRecord>
  /** The organisation's pending invitations (neither used, withdrawn nor expired), newest first. */
  listInvitations (orgId: number, now: Date): Promise<InvitationRecord[]>
  /** Withdraws a pending invitation of the organisation; false when there is none by that id. */
  withdrawInvitation (orgId: number, invitationId: number, now: Date): Promise<boolean>
  /** The pending invitation with this token hash, if it may be used now. */
  findInvitation (tokenHash: string, now: Date): Promise<InvitationWithOrganisation | undefined>
  /**
   * Accepts the pending invitation with this token hash for the user whose address is `email`, in one transaction:
   * used (conditionally: of two requests one wins), the membership added unless the user has one, and its events.
   */
  acceptInvitation (tokenHash: string, user: { id: number, email: string }, now: Date,
    audit?: (membership: MembershipRecord, invitation: InvitationRecord) => SecurityEventWrite[]): Promise<InvitationAcceptance>
  /** The operators' search (GET /admin/orgs): by name or slug, ignoring case, in id order, with member counts. */
  searchOrganisations (search: OrganisationSearch): Promise<OrganisationSummary[]>
}

import type { AccountStore, InvitationRecord, InvitationWithOrganisation, MembershipRecord, OrganisationRecord, OrgRole, SecurityEventWrite } from '../../db/store.js'
import type { ProveAddress } from '../accounts/prove-address.js'
import { currentDate, type Clock } from '../clock.js'
import { InvalidInvitationError, InvitationEmailMismatchError, InvitationNotFoundError, OrgForbiddenError } from '../errors.js'
import type { Mailer } from '../mail/mailer.js'
import { organisationInvitationMail } from '../mails.js'
import type { Actor } from '../sessions/actor.js'
import { hashToken, newRandomToken } from '../tokens/random-token.js'
import type { Organisations } from './organisations.js'
import { refusalToInvite, refusalToManage } from './roles.js'

/** How long an invitation's link works (the contract's 7 days). */
export const INVITATION_TTL_SECONDS = 7 * 24 * 3600
/** Where an invitation's link leads (of PUBLIC_URL): the page that signs in or up and accepts. */
export const INVITATION_PATH = '/invitations'

/**
 * Invitations to an organisation (docs/organisations.md): mailed links (256 random bits, stored as SHA-256 hashes,
 * single use, 7 days), each for one address and a role; accepted only by the account with that address, which the
 * link proves (the one proveAddress).
 */
export interface Invitations {
  /** An owner or an admin invites `email` with `role` (only an owner invites an owner); the row and its mail in one transaction. */
  invite (actor: Actor, orgId: number, invitation: { email: string, role: OrgRole }): Promise<InvitationRecord>
  /** The pending invitations (owner, admin). */
  list (userId: number, orgId: number): Promise<InvitationRecord[]>
  /** Withdraws a pending invitation (owner, admin): its link no longer works. 404 INVITATION_NOT_FOUND when there is none pending by that id. */
  withdraw (actor: Actor, orgId: number, invitationId: number): Promise<void>
  /**
   * Accepts an invitation as the signed-in user: 400 (as a used reset link) when unknown, used, withdrawn or expired;
   * 403 INVITATION_EMAIL_MISMATCH for another address (the invitation stays usable). A member already keeps its role.
   * The address is proved; the accepting session stays.
   */
  accept (actor: Actor, token: string): Promise<{ org: OrganisationRecord, role: OrgRole }>
  /**
   * What the invitation page shows before anyone signs in (the organisation, who invites, the address and role): the
   * holder of the link may read it. 400 as `accept` when it cannot be used.
   */
  preview (token: string): Promise<InvitationWithOrganisation>
}

export interface InvitationsDependencies {
  store: Pick<AccountStore, 'createInvitation' | 'listInvitations' | 'withdrawInvitation' | 'acceptInvitation' | 'findInvitation'>
  clock: Clock
  mailer: Pick<Mailer, 'forOutbox' | 'wake'>
  organisations: Pick<Organisations, 'find' | 'eventOf' | 'published'>
  proveAddress: ProveAddress
}

export interface InvitationsOptions {
  /** Where the links lead: PUBLIC_URL. */
  publicUrl: string
}

export function createInvitations ({ store, clock, mailer, organisations, proveAddress }: InvitationsDependencies, { publicUrl }: InvitationsOptions): Invitations {
  async function managerOf (userId: number, orgId: number) {
    const found = await organisations.find(userId, orgId)
    const refusal = refusalToManage(found.role)
    if (refusal !== undefined) throw new OrgForbiddenError(refusal)
    return found
  }

  return {
    async invite (actor, orgId, { email, role }) {
      const { org, role: actorRole } = await organisations.find(actor.user.id, orgId)
      const refusal = refusalToInvite(actorRole, role)
      if (refusal !== undefined) throw new OrgForbiddenError(refusal)
      const now = currentDate(clock)
      const token = newRandomToken()
      const link = `${publicUrl}${INVITATION_PATH}#token=${token}`
      const inviterName = `${actor.user.firstName} ${actor.user.lastName}`.trim()
      const mail = mailer.forOutbox(organisationInvitationMail(email, { orgName: org.name, inviterName, role }, link, INVITATION_TTL_SECONDS))
      const invitation = await store.createInvitation({
        orgId, email, role, tokenHash: hashToken(token), invitedBy: actor.user.id, expiresAt: new Date(now.getTime() + INVITATION_TTL_SECONDS * 1000)
      }, now, mail)
      mailer.wake()
      return invitation
    },

    async list (userId, orgId) {
      await managerOf(userId, orgId)
      return await store.listInvitations(orgId, currentDate(clock))
    },

    async withdraw (actor, orgId, invitationId) {
      await managerOf(actor.user.id, orgId)
      if (!await store.withdrawInvitation(orgId, invitationId, currentDate(clock))) throw new InvitationNotFoundError()
    },

    async accept (actor, token) {
      const { user, sessionId, client } = actor
      const writes: SecurityEventWrite[] = []
      const audit = (member: MembershipRecord, invitation: InvitationRecord) => {
        writes.push(organisations.eventOf('org.member_added', actor, member.userId,
          { org_id: member.orgId, role: member.role, invitation_id: invitation.id, invited_by: invitation.invitedBy }))
        return writes
      }
      const outcome = await store.acceptInvitation(hashToken(token), { id: user.id, email: user.email }, currentDate(clock), audit)
      if (outcome.outcome === 'invalid') throw new InvalidInvitationError()
      if (outcome.outcome === 'mismatch') throw new InvitationEmailMismatchError()
      organisations.published(writes)
      // The link reached this account's inbox: the address is proved, as a verification link proves it (a never-verified
      // account is claimed), but the session that accepted is the owner's and stays.
      await proveAddress({ userId: user.id, email: user.email, keepSessionId: sessionId }, client)
      return { org: outcome.org, role: outcome.role }
    },

    async preview (token) {
      const invitation = await store.findInvitation(hashToken(token), currentDate(clock))
      if (invitation === undefined) throw new InvalidInvitationError()
      return invitation
    }
  }
}

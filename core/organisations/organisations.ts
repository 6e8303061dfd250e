import {
  DuplicateSlugError, type AccountStore, type MemberRecord, type MembershipChange, type MembershipRecord, type MembershipSummary,
  type OrganisationRecord, type OrgRole, type SecurityEventWrite
} from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import { LastOwnerError, OrgForbiddenError, OrgNotFoundError, SlugTakenError, ValidationFailedError } from '../errors.js'
import type { SecurityEvents } from '../events/security-events.js'
import type { Actor } from '../sessions/actor.js'
import type { Sessions } from '../sessions/sessions.js'
import type { OrgWebhookType, Webhooks } from '../webhooks/webhooks.js'
import { refusalToChangeRole, refusalToDelete, refusalToManage, refusalToRemove } from './roles.js'
import { slugFromName, suffixedSlug } from './slugs.js'

/** Tries of a derived slug with a random suffix, when the name's own is taken, before 409 SLUG_TAKEN. */
const DERIVED_SLUG_TRIES = 3

/** An organisation as one of its members sees it: with the member's role. */
export interface OrganisationOfMember {
  org: OrganisationRecord
  role: OrgRole
}

/**
 * Organisations, their members and roles (docs/organisations.md). A non-member learns nothing: every act on an
 * organisation starts by finding the caller's membership, and without one answers 404 ORG_NOT_FOUND as for an
 * organisation that does not exist. Routes only translate HTTP to these calls.
 */
export interface Organisations {
  /** A new organisation, its creator its owner; the slug derived from the name when none is given. 409 SLUG_TAKEN for a given slug another has. */
  create (actor: Actor, fields: { name: string, slug?: string }): Promise<OrganisationOfMember>
  /** The user's memberships, oldest first. */
  list (userId: number): Promise<MembershipSummary[]>
  /** The organisation and the user's role in it; 404 ORG_NOT_FOUND for a non-member. */
  find (userId: number, orgId: number): Promise<OrganisationOfMember>
  /** Renames it or changes its slug: an owner or an admin. */
  update (actor: Actor, orgId: number, changes: { name?: string, slug?: string }): Promise<OrganisationOfMember>
  /** Deletes it with its memberships and invitations: an owner, in a fresh session (403 REAUTHENTICATION_REQUIRED). */
  delete (actor: Actor, orgId: number): Promise<void>
  /** Its members (any member may list them). */
  members (userId: number, orgId: number): Promise<MemberRecord[]>
  /** Gives a member another role (docs/organisations.md, the roles' rules); 409 LAST_OWNER when it would leave no owner. */
  changeRole (actor: Actor, orgId: number, userId: number, role: OrgRole): Promise<MemberRecord>
  /** Removes a member, or the caller itself (leaving); 409 LAST_OWNER for the only owner. */
  removeMember (actor: Actor, orgId: number, userId: number): Promise<void>
  /** The caller's membership, or 404 ORG_NOT_FOUND: the first step of every act on an organisation (the invitations' too). */
  membershipOf (userId: number, orgId: number): Promise<MembershipRecord>
  /** A security event of the organisation and the webhook it sends, to be written in the change's transaction; `published` after. */
  eventOf (type: OrgWebhookType, actor: Actor, userId: number, detail: Record<string, unknown>): SecurityEventWrite
  /** Logs stored events and wakes the webhooks' worker. */
  published (writes: SecurityEventWrite[]): void
}

export interface OrganisationsDependencies {
  store: Pick<AccountStore, 'createOrganisation' | 'findOrganisation' | 'updateOrganisation' | 'deleteOrganisation' | 'membershipsOfUser' |
    'membershipOf' | 'listMembers' | 'changeMemberRole' | 'removeMember'>
  clock: Clock
  sessions: Pick<Sessions, 'requireFresh'>
  securityEvents: Pick<SecurityEvents, 'published'>
  webhooks: Pick<Webhooks, 'orgEvent'>
}

/** The name trimmed; blank is refused (the schema counts characters before trimming). */
function trimmedName (name: string): string {
  const trimmed = name.trim()
  if (trimmed === '') throw new ValidationFailedError('body/name must not be blank')
  return trimmed
}

function forbidIf (refusal: string | undefined): void {
  if (refusal !== undefined) throw new OrgForbiddenError(refusal)
}

export function createOrganisations ({ store, clock, sessions, securityEvents, webhooks }: OrganisationsDependencies): Organisations {
  /** The change's outcome, or its error: a membership gone meanwhile is a non-member's 404. */
  function changed (change: MembershipChange): MembershipRecord {
    if (change.outcome === 'not_member') throw new OrgNotFoundError()
    if (change.outcome === 'last_owner') throw new LastOwnerError()
    return change.previous
  }

  /** Collects the events an audit callback builds, to publish them once the store has written them. */
  function collecting<Written> (build: (written: Written) => SecurityEventWrite[]) {
    const writes: SecurityEventWrite[] = []
    return { writes, audit: (written: Written) => { const built = build(written); writes.push(...built); return built } }
  }

  const organisations: Organisations = {
    async create (actor, { name, slug }) {
      const fields = { name: trimmedName(name), ownerId: actor.user.id }
      const derived = slug === undefined ? slugFromName(fields.name) : slug
      const events = collecting((org: OrganisationRecord) => [organisations.eventOf('org.created', actor, actor.user.id, { org_id: org.id, slug: org.slug, name: org.name })])
      for (let attempt = 0; ; attempt++) {
        // A derived slug that another has gets a random suffix; a slug the caller chose is its to change.
        const candidate = attempt === 0 ? derived : suffixedSlug(derived)
        try {
          const org = await store.createOrganisation({ ...fields, slug: candidate }, currentDate(clock), events.audit)
          organisations.published(events.writes)
          return { org, role: 'owner' }
        } catch (error) {
          if (!(error instanceof DuplicateSlugError)) throw error
          if (slug !== undefined || attempt + 1 >= DERIVED_SLUG_TRIES) throw new SlugTakenError()
        }
      }
    },

    list: async (userId) => await store.membershipsOfUser(userId),

    async find (userId, orgId) {
      const { role } = await organisations.membershipOf(userId, orgId)
      const org = await store.findOrganisation(orgId)
      if (org === undefined) throw new OrgNotFoundError()
      return { org, role }
    },

    async update (actor, orgId, { name, slug }) {
      const { role } = await organisations.membershipOf(actor.user.id, orgId)
      forbidIf(refusalToManage(role))
      const changes = { ...(name === undefined ? {} : { name: trimmedName(name) }), ...(slug === undefined ? {} : { slug }) }
      try {
        const org = await store.updateOrganisation(orgId, changes, currentDate(clock))
        if (org === undefined) throw new OrgNotFoundError()
        return { org, role }
      } catch (error) {
        throw error instanceof DuplicateSlugError ? new SlugTakenError() : error
      }
    },

    async delete (actor, orgId) {
      const { role } = await organisations.membershipOf(actor.user.id, orgId)
      forbidIf(refusalToDelete(role))
      // Deleting an organisation is what a session thief could do to hurt: a recent proof, as for deleting the account.
      await sessions.requireFresh(actor.sessionId)
      const org = await store.findOrganisation(orgId)
      if (org === undefined) throw new OrgNotFoundError()
      const writes = [organisations.eventOf('org.deleted', actor, actor.user.id, { org_id: org.id, slug: org.slug })]
      if (!await store.deleteOrganisation(orgId, writes)) throw new OrgNotFoundError()
      organisations.published(writes)
    },

    async members (userId, orgId) {
      await organisations.membershipOf(userId, orgId)
      return await store.listMembers(orgId)
    },

    async changeRole (actor, orgId, userId, role) {
      const { role: actorRole } = await organisations.membershipOf(actor.user.id, orgId)
      // A member may not learn who else belongs by probing ids: only a manager hears that a user is no member.
      forbidIf(refusalToManage(actorRole))
      const target = await store.membershipOf(orgId, userId)
      if (target === undefined) throw new OrgNotFoundError()
      forbidIf(refusalToChangeRole(actorRole, target.role, role))
      const events = collecting((member: MembershipRecord) => [organisations.eventOf('org.member_role_changed', actor, member.userId,
        { org_id: orgId, role: member.role, previous_role: target.role, by_user_id: actor.user.id })])
      changed(await store.changeMemberRole(orgId, userId, role, currentDate(clock), events.audit))
      organisations.published(events.writes)
      const member = (await store.listMembers(orgId)).find((each) => each.userId === userId)
      // Removed by another request since: as any user that is no member.
      if (member === undefined) throw new OrgNotFoundError()
      return member
    },

    async removeMember (actor, orgId, userId) {
      const { role: actorRole } = await organisations.membershipOf(actor.user.id, orgId)
      const self = userId === actor.user.id
      if (!self) forbidIf(refusalToManage(actorRole))
      const target = self ? { role: actorRole } : await store.membershipOf(orgId, userId)
      if (target === undefined) throw new OrgNotFoundError()
      forbidIf(refusalToRemove(actorRole, target.role, self))
      const events = collecting((member: MembershipRecord) => [organisations.eventOf('org.member_removed', actor, member.userId,
        { org_id: orgId, role: member.role, by_user_id: actor.user.id })])
      changed(await store.removeMember(orgId, userId, events.audit))
      organisations.published(events.writes)
    },

    async membershipOf (userId, orgId) {
      const membership = await store.membershipOf(orgId, userId)
      if (membership === undefined) throw new OrgNotFoundError()
      return membership
    },

    eventOf (type, { user, sessionId, client }, userId, detail) {
      const { ip, userAgent, requestId } = client
      const event = { type, userId, sessionId: userId === user.id ? sessionId : null, ip, userAgent, requestId, detail, createdAt: currentDate(clock) }
      const webhook = webhooks.orgEvent(type, { ...detail, user_id: userId })
      return webhook === undefined ? { event } : { event, webhook }
    },

    published (writes) {
      for (const write of writes) securityEvents.published(write)
    }
  }
  return organisations
}

import type { OrganisationSearch, OrganisationsStore } from '../store.js'
import { organisationSearchCondition } from '../organisation-search.js'
import { and, asc, count, desc, eq, getTableColumns, gt, isNull, sql } from 'drizzle-orm'
import type { MailMessage, MembershipChange, MembershipRecord, NewInvitation, OrgRole, OrganisationRecord, SecurityEventWrite } from '../store.js'
import * as outbox from './mail-outbox.js'
import { insertSecurityEvent } from './events.js'
import { mailOutbox, memberships, orgInvitations, organizations, users } from './schema.js'
import type { Tx } from './queries.js'
import type { SqliteConnection } from './connection.js'

const pending = (now: Date) => and(isNull(orgInvitations.usedAt), isNull(orgInvitations.withdrawnAt), gt(orgInvitations.expiresAt, now))

function writeAudit (tx: Tx, writes: SecurityEventWrite[] | undefined): void {
  for (const write of writes ?? []) insertSecurityEvent(tx, write)
}

function membershipIn (tx: Tx, orgId: number, userId: number): MembershipRecord | undefined {
  return tx.select().from(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).get()
}

function ownersIn (tx: Tx, orgId: number): number {
  return tx.select({ owners: count() }).from(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.role, 'owner'))).get()?.owners ?? 0
}

/** The organisations of the SQLite store (db/store/organisations.ts). Immediate transactions: one writer, so the owner counts hold until the commit. */
export function organisationsQueries (c: SqliteConnection): OrganisationsStore {
  return {
    async createOrganisation ({ name, slug, ownerId }, now, audit) {
      return c.run(() => c.db.transaction((tx) => {
        const org: OrganisationRecord = tx.insert(organizations).values({ name, slug, createdAt: now, updatedAt: now }).returning().get()
        tx.insert(memberships).values({ orgId: org.id, userId: ownerId, role: 'owner', joinedAt: now }).run()
        writeAudit(tx, audit?.(org))
        return org
      }, { behavior: 'immediate' }))
    },

    async findOrganisation (orgId) {
      return c.run(() => c.db.select().from(organizations).where(eq(organizations.id, orgId)).get())
    },

    async updateOrganisation (orgId, changes, now) {
      return c.run(() => c.db.update(organizations).set({ ...changes, updatedAt: now }).where(eq(organizations.id, orgId)).returning().get())
    },

    async deleteOrganisation (orgId, audit) {
      return c.run(() => c.db.transaction((tx) => {
        // Memberships and invitations go with it (ON DELETE CASCADE).
        const deleted = tx.delete(organizations).where(eq(organizations.id, orgId)).run().changes > 0
        if (deleted) writeAudit(tx, audit)
        return deleted
      }, { behavior: 'immediate' }))
    },

    async membershipsOfUser (userId) {
      return c.run(() => c.db.select({ orgId: organizations.id, slug: organizations.slug, name: organizations.name, role: memberships.role })
        .from(memberships).innerJoin(organizations, eq(organizations.id, memberships.orgId))
        .where(eq(memberships.userId, userId)).orderBy(asc(memberships.joinedAt), asc(memberships.orgId)).all())
    },

    async membershipOf (orgId, userId) {
      return c.run(() => c.db.select({ ...getTableColumns(memberships), slug: organizations.slug })
        .from(memberships).innerJoin(organizations, eq(organizations.id, memberships.orgId))
        .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).get())
    },

    async listMembers (orgId) {
      return c.run(() => c.db.select({ ...getTableColumns(memberships), email: users.email, firstName: users.firstName, lastName: users.lastName })
        .from(memberships).innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.orgId, orgId)).orderBy(asc(memberships.joinedAt), asc(memberships.userId)).all())
    },

    async changeMemberRole (orgId, userId, role, now, audit) {
      return c.run(() => c.db.transaction((tx): MembershipChange => {
        const previous = membershipIn(tx, orgId, userId)
        if (previous === undefined) return { outcome: 'not_member' }
        if (previous.role === 'owner' && role !== 'owner' && ownersIn(tx, orgId) <= 1) return { outcome: 'last_owner' }
        if (previous.role === role) return { outcome: 'changed', previous }
        tx.update(memberships).set({ role }).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).run()
        writeAudit(tx, audit?.({ ...previous, role }))
        return { outcome: 'changed', previous }
      }, { behavior: 'immediate' }))
    },

    async removeMember (orgId, userId, audit) {
      return c.run(() => c.db.transaction((tx): MembershipChange => {
        const previous = membershipIn(tx, orgId, userId)
        if (previous === undefined) return { outcome: 'not_member' }
        if (previous.role === 'owner' && ownersIn(tx, orgId) <= 1) return { outcome: 'last_owner' }
        tx.delete(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).run()
        writeAudit(tx, audit?.(previous))
        return { outcome: 'changed', previous }
      }, { behavior: 'immediate' }))
    },

    async createInvitation (invitation: NewInvitation, now: Date, mail: MailMessage) {
      return c.run(() => c.db.transaction((tx) => {
        const created = tx.insert(orgInvitations).values({ ...invitation, createdAt: now }).returning().get()
        tx.insert(mailOutbox).values(outbox.outboxRow(mail, now)).run()
        return created
      }, { behavior: 'immediate' }))
    },

    async listInvitations (orgId, now) {
      return c.run(() => c.db.select().from(orgInvitations).where(and(eq(orgInvitations.orgId, orgId), pending(now)))
        .orderBy(desc(orgInvitations.createdAt), desc(orgInvitations.id)).all())
    },

    async withdrawInvitation (orgId, invitationId, now) {
      return c.run(() => c.db.update(orgInvitations).set({ withdrawnAt: now })
        .where(and(eq(orgInvitations.id, invitationId), eq(orgInvitations.orgId, orgId), pending(now))).run().changes > 0)
    },

    async findInvitation (tokenHash, now) {
      const row = c.run(() => c.db.select({ invitation: orgInvitations, orgName: organizations.name, orgSlug: organizations.slug, inviterFirst: users.firstName, inviterLast: users.lastName })
        .from(orgInvitations).innerJoin(organizations, eq(organizations.id, orgInvitations.orgId))
        .leftJoin(users, eq(users.id, orgInvitations.invitedBy))
        .where(and(eq(orgInvitations.tokenHash, tokenHash), pending(now))).get())
      if (row === undefined) return undefined
      const inviterName = row.inviterFirst === null ? null : `${row.inviterFirst} ${row.inviterLast ?? ''}`.trim()
      return { ...row.invitation, orgName: row.orgName, orgSlug: row.orgSlug, inviterName }
    },

    async acceptInvitation (tokenHash, user, now, audit) {
      return c.run(() => c.db.transaction((tx) => {
        const invitation = tx.select().from(orgInvitations).where(and(eq(orgInvitations.tokenHash, tokenHash), pending(now))).get()
        if (invitation === undefined) return { outcome: 'invalid' as const }
        // Another account: nothing written, the invitation stays for the address it was made for.
        if (invitation.email.toLowerCase() !== user.email.toLowerCase()) return { outcome: 'mismatch' as const }
        const org = tx.select().from(organizations).where(eq(organizations.id, invitation.orgId)).get()
        if (org === undefined) return { outcome: 'invalid' as const }
        tx.update(orgInvitations).set({ usedAt: now }).where(eq(orgInvitations.id, invitation.id)).run()
        const added = tx.insert(memberships).values({ orgId: org.id, userId: user.id, role: invitation.role, joinedAt: now })
          .onConflictDoNothing().returning().get()
        if (added !== undefined) writeAudit(tx, audit?.(added, invitation))
        const role: OrgRole = added?.role ?? membershipIn(tx, org.id, user.id)?.role ?? invitation.role
        return { outcome: 'accepted' as const, org, role, added: added !== undefined, invitation: { ...invitation, usedAt: now } }
      }, { behavior: 'immediate' }))
    },

    async searchOrganisations (search: OrganisationSearch) {
      // The member count as a subquery: one statement for the page, none per row.
      const memberCount = sql<number>`(select count(*) from ${memberships} where ${memberships.orgId} = ${organizations.id})`.mapWith(Number)
      return c.run(() => c.db.select({ ...getTableColumns(organizations), memberCount }).from(organizations)
        .where(organisationSearchCondition(organizations, search))
        .orderBy(asc(organizations.id))
        .limit(search.limit)
        .all())
    }
  }
}

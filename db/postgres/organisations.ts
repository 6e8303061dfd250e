import type { OrganisationSearch, OrganisationsStore } from '../store.js'
import { organisationSearchCondition } from '../organisation-search.js'
import { and, asc, count, desc, eq, getTableColumns, gt, isNull, sql } from 'drizzle-orm'
import type { MailMessage, MembershipChange, MembershipRecord, NewInvitation, OrgRole, SecurityEventWrite } from '../store.js'
import * as outbox from './mail-outbox.js'
import { insertSecurityEvent } from './events.js'
import { mailOutbox, memberships, orgInvitations, organizations, users } from './schema.js'
import type { Transaction } from './queries.js'
import type { PostgresConnection } from './connection.js'

const pending = (now: Date) => and(isNull(orgInvitations.usedAt), isNull(orgInvitations.withdrawnAt), gt(orgInvitations.expiresAt, now))

async function writeAudit (tx: Transaction, writes: SecurityEventWrite[] | undefined): Promise<void> {
  for (const write of writes ?? []) await insertSecurityEvent(tx, write)
}

async function membershipIn (tx: Transaction, orgId: number, userId: number): Promise<MembershipRecord | undefined> {
  return (await tx.select().from(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))))[0]
}

/**
 * Locks the organisation's row for the transaction: every change of its memberships takes this lock first, so two
 * owners demoting (or removing) each other at once run one after the other, and the second sees one owner left.
 * False when the organisation is gone.
 */
async function lockOrganisation (tx: Transaction, orgId: number): Promise<boolean> {
  return (await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, orgId)).for('update')).length > 0
}

async function ownersIn (tx: Transaction, orgId: number): Promise<number> {
  return (await tx.select({ owners: count() }).from(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.role, 'owner'))))[0]?.owners ?? 0
}

/** The organisations of the PostgreSQL store (db/store/organisations.ts). */
export function organisationsQueries (c: PostgresConnection): OrganisationsStore {
  return {
    async createOrganisation ({ name, slug, ownerId }, now, audit) {
      return c.run(() => c.transaction(async (tx) => {
        const [org] = await tx.insert(organizations).values({ name, slug, createdAt: now, updatedAt: now }).returning()
        await tx.insert(memberships).values({ orgId: org.id, userId: ownerId, role: 'owner', joinedAt: now })
        await writeAudit(tx, audit?.(org))
        return org
      }))
    },

    async findOrganisation (orgId) {
      return c.run(async () => (await c.db.select().from(organizations).where(eq(organizations.id, orgId)))[0])
    },

    async updateOrganisation (orgId, changes, now) {
      return c.run(async () => (await c.db.update(organizations).set({ ...changes, updatedAt: now }).where(eq(organizations.id, orgId)).returning())[0])
    },

    async deleteOrganisation (orgId, audit) {
      return c.run(() => c.transaction(async (tx) => {
        // Memberships and invitations go with it (ON DELETE CASCADE).
        const deleted = ((await tx.delete(organizations).where(eq(organizations.id, orgId))).rowCount ?? 0) > 0
        if (deleted) await writeAudit(tx, audit)
        return deleted
      }))
    },

    async membershipsOfUser (userId) {
      return c.run(() => c.db.select({ orgId: organizations.id, slug: organizations.slug, name: organizations.name, role: memberships.role })
        .from(memberships).innerJoin(organizations, eq(organizations.id, memberships.orgId))
        .where(eq(memberships.userId, userId)).orderBy(asc(memberships.joinedAt), asc(memberships.orgId)))
    },

    async membershipOf (orgId, userId) {
      return c.run(async () => (await c.db.select({ ...getTableColumns(memberships), slug: organizations.slug })
        .from(memberships).innerJoin(organizations, eq(organizations.id, memberships.orgId))
        .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))))[0])
    },

    async listMembers (orgId) {
      return c.run(() => c.db.select({ ...getTableColumns(memberships), email: users.email, firstName: users.firstName, lastName: users.lastName })
        .from(memberships).innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.orgId, orgId)).orderBy(asc(memberships.joinedAt), asc(memberships.userId)))
    },

    async changeMemberRole (orgId, userId, role, now, audit) {
      return c.run(() => c.transaction(async (tx): Promise<MembershipChange> => {
        if (!await lockOrganisation(tx, orgId)) return { outcome: 'not_member' }
        const previous = await membershipIn(tx, orgId, userId)
        if (previous === undefined) return { outcome: 'not_member' }
        if (previous.role === 'owner' && role !== 'owner' && await ownersIn(tx, orgId) <= 1) return { outcome: 'last_owner' }
        if (previous.role === role) return { outcome: 'changed', previous }
        await tx.update(memberships).set({ role }).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
        await writeAudit(tx, audit?.({ ...previous, role }))
        return { outcome: 'changed', previous }
      }))
    },

    async removeMember (orgId, userId, audit) {
      return c.run(() => c.transaction(async (tx): Promise<MembershipChange> => {
        if (!await lockOrganisation(tx, orgId)) return { outcome: 'not_member' }
        const previous = await membershipIn(tx, orgId, userId)
        if (previous === undefined) return { outcome: 'not_member' }
        if (previous.role === 'owner' && await ownersIn(tx, orgId) <= 1) return { outcome: 'last_owner' }
        await tx.delete(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
        await writeAudit(tx, audit?.(previous))
        return { outcome: 'changed', previous }
      }))
    },

    async createInvitation (invitation: NewInvitation, now: Date, mail: MailMessage) {
      return c.run(() => c.transaction(async (tx) => {
        const [created] = await tx.insert(orgInvitations).values({ ...invitation, createdAt: now }).returning()
        await tx.insert(mailOutbox).values(outbox.outboxRow(mail, now))
        return created
      }))
    },

    async listInvitations (orgId, now) {
      return c.run(() => c.db.select().from(orgInvitations).where(and(eq(orgInvitations.orgId, orgId), pending(now)))
        .orderBy(desc(orgInvitations.createdAt), desc(orgInvitations.id)))
    },

    async withdrawInvitation (orgId, invitationId, now) {
      return c.run(async () => ((await c.db.update(orgInvitations).set({ withdrawnAt: now })
        .where(and(eq(orgInvitations.id, invitationId), eq(orgInvitations.orgId, orgId), pending(now)))).rowCount ?? 0) > 0)
    },

    async findInvitation (tokenHash, now) {
      const [row] = await c.run(() => c.db.select({ invitation: orgInvitations, orgName: organizations.name, orgSlug: organizations.slug, inviterFirst: users.firstName, inviterLast: users.lastName })
        .from(orgInvitations).innerJoin(organizations, eq(organizations.id, orgInvitations.orgId))
        .leftJoin(users, eq(users.id, orgInvitations.invitedBy))
        .where(and(eq(orgInvitations.tokenHash, tokenHash), pending(now))))
      if (row === undefined) return undefined
      const inviterName = row.inviterFirst === null ? null : `${row.inviterFirst} ${row.inviterLast ?? ''}`.trim()
      return { ...row.invitation, orgName: row.orgName, orgSlug: row.orgSlug, inviterName }
    },

    async acceptInvitation (tokenHash, user, now, audit) {
      return c.run(() => c.transaction(async (tx) => {
        // Locked: of two acceptances of one token, the second waits and then finds it used.
        const [invitation] = await tx.select().from(orgInvitations).where(and(eq(orgInvitations.tokenHash, tokenHash), pending(now))).for('update')
        if (invitation === undefined) return { outcome: 'invalid' as const }
        // Another account: nothing written, the invitation stays for the address it was made for.
        if (invitation.email.toLowerCase() !== user.email.toLowerCase()) return { outcome: 'mismatch' as const }
        const [org] = await tx.select().from(organizations).where(eq(organizations.id, invitation.orgId))
        if (org === undefined) return { outcome: 'invalid' as const }
        await tx.update(orgInvitations).set({ usedAt: now }).where(eq(orgInvitations.id, invitation.id))
        const [added] = await tx.insert(memberships).values({ orgId: org.id, userId: user.id, role: invitation.role, joinedAt: now })
          .onConflictDoNothing().returning()
        if (added !== undefined) await writeAudit(tx, audit?.(added, invitation))
        const role: OrgRole = added?.role ?? (await membershipIn(tx, org.id, user.id))?.role ?? invitation.role
        return { outcome: 'accepted' as const, org, role, added: added !== undefined, invitation: { ...invitation, usedAt: now } }
      }))
    },

    async searchOrganisations (search: OrganisationSearch) {
      // The member count as a subquery: one statement for the page, none per row.
      const memberCount = sql<number>`(select count(*) from ${memberships} where ${memberships.orgId} = ${organizations.id})`.mapWith(Number)
      return c.run(() => c.db.select({ ...getTableColumns(organizations), memberCount }).from(organizations)
        .where(organisationSearchCondition(organizations, search))
        .orderBy(asc(organizations.id))
        .limit(search.limit))
    }
  }
}

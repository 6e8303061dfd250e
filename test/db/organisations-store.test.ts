import t from 'tap'
import { DuplicateSlugError, type AccountStore, type SecurityEventWrite } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

/*
 * Organisations (db/store/organisations.ts) on the backend under test: memberships with roles, the last owner kept
 * in the transaction that writes (two owners demoting each other at once leave one), invitations single use and
 * bound to their address, everything gone with its organisation or its user.
 */

const DAY = 86_400_000

async function newUser (store: AccountStore, email: string) {
  return await store.createUser({ firstName: 'Ada', lastName: email.split('@')[0], username: null, email, passwordHash: 'hash' })
}

const event = (type: string, userId: number, detail: Record<string, unknown>): SecurityEventWrite => ({
  event: { type, userId, sessionId: null, ip: null, userAgent: null, requestId: null, detail, createdAt: new Date() }
})

async function orgWithOwner (store: AccountStore, slug = 'acme') {
  const owner = await newUser(store, `owner-${slug}@example.test`)
  const org = await store.createOrganisation({ name: 'Acme', slug, ownerId: owner.id }, new Date())
  return { owner, org }
}

t.test('an organisation is created with its owner and its events; a taken slug is refused and writes nothing', async (t) => {
  const store = await testStore(t)
  const owner = await newUser(store, 'owner@example.test')
  const org = await store.createOrganisation({ name: 'Acme Ltd', slug: 'acme', ownerId: owner.id }, new Date(),
    (created) => [event('org.created', owner.id, { org_id: created.id })])
  t.match(org, { name: 'Acme Ltd', slug: 'acme' })
  t.same(await store.membershipsOfUser(owner.id), [{ orgId: org.id, slug: 'acme', name: 'Acme Ltd', role: 'owner' }])
  t.match(await store.membershipOf(org.id, owner.id), { orgId: org.id, userId: owner.id, role: 'owner', slug: 'acme' }, 'one membership, with its organisation’s slug')
  t.match(await store.listSecurityEvents(owner.id, { limit: 10 }), [{ type: 'org.created', detail: { org_id: org.id } }])
  await t.rejects(store.createOrganisation({ name: 'Other', slug: 'acme', ownerId: owner.id }, new Date()), DuplicateSlugError)
  t.equal((await store.membershipsOfUser(owner.id)).length, 1, 'the refused one left no membership')
  t.match(await store.findOrganisation(org.id), { id: org.id, slug: 'acme' })
  t.equal(await store.findOrganisation(org.id + 1000), undefined)
})

t.test('an organisation is renamed and its slug changed, unless another has that slug', async (t) => {
  const store = await testStore(t)
  const { org } = await orgWithOwner(store, 'acme')
  await orgWithOwner(store, 'globex')
  t.match(await store.updateOrganisation(org.id, { name: 'Acme Group', slug: 'acme-group' }, new Date()), { name: 'Acme Group', slug: 'acme-group' })
  await t.rejects(store.updateOrganisation(org.id, { slug: 'globex' }, new Date()), DuplicateSlugError)
  t.match(await store.findOrganisation(org.id), { slug: 'acme-group' })
  t.equal(await store.updateOrganisation(org.id + 1000, { name: 'x' }, new Date()), undefined)
})

t.test('members are listed with their names, re-roled and removed; the last owner stays', async (t) => {
  const store = await testStore(t)
  const { owner, org } = await orgWithOwner(store)
  const bob = await newUser(store, 'bob@example.test')
  await store.createInvitation({ orgId: org.id, email: bob.email, role: 'member', tokenHash: 'bob-token', invitedBy: owner.id, expiresAt: new Date(Date.now() + DAY) },
    new Date(), { to: bob.email, subject: 'Join', text: 'link' })
  t.match(await store.acceptInvitation('bob-token', bob, new Date()), { outcome: 'accepted', role: 'member', added: true })
  t.match(await store.listMembers(org.id), [{ userId: owner.id, role: 'owner', email: owner.email, firstName: 'Ada' }, { userId: bob.id, role: 'member', email: bob.email }])

  t.same(await store.changeMemberRole(org.id, owner.id, 'admin', new Date()), { outcome: 'last_owner' }, 'the only owner cannot be demoted')
  t.same(await store.removeMember(org.id, owner.id), { outcome: 'last_owner' }, 'nor removed')
  const promoted = await store.changeMemberRole(org.id, bob.id, 'owner', new Date(), (m) => [event('org.member_role_changed', m.userId, { role: m.role })])
  t.match(promoted, { outcome: 'changed', previous: { role: 'member' } })
  t.match(await store.listSecurityEvents(bob.id, { limit: 10 }), [{ type: 'org.member_role_changed', detail: { role: 'owner' } }])
  t.match(await store.changeMemberRole(org.id, owner.id, 'member', new Date()), { outcome: 'changed', previous: { role: 'owner' } }, 'with another owner, it can')
  t.match(await store.removeMember(org.id, owner.id, (m) => [event('org.member_removed', m.userId, { role: m.role })]), { outcome: 'changed', previous: { role: 'member' } })
  t.equal(await store.membershipOf(org.id, owner.id), undefined)
  t.match(await store.listSecurityEvents(owner.id, { limit: 10 }), [{ type: 'org.member_removed' }])
  t.same(await store.removeMember(org.id, owner.id), { outcome: 'not_member' })
  t.same(await store.changeMemberRole(org.id, owner.id, 'admin', new Date()), { outcome: 'not_member' })
  t.same(await store.changeMemberRole(org.id + 1000, bob.id, 'admin', new Date()), { outcome: 'not_member' }, 'no such organisation')
})

t.test('two owners demoting each other at once, or removing each other, leave one owner', async (t) => {
  const store = await testStore(t)
  for (const act of ['demote', 'remove'] as const) {
    const { owner, org } = await orgWithOwner(store, `race-${act}`)
    const other = await newUser(store, `other-${act}@example.test`)
    await store.createInvitation({ orgId: org.id, email: other.email, role: 'owner', tokenHash: `race-${act}`, invitedBy: owner.id, expiresAt: new Date(Date.now() + DAY) },
      new Date(), { to: other.email, subject: 'Join', text: 'link' })
    await store.acceptInvitation(`race-${act}`, other, new Date())
    const outcomes = await Promise.all([owner.id, other.id].map((userId) => act === 'demote'
      ? store.changeMemberRole(org.id, userId, 'member', new Date())
      : store.removeMember(org.id, userId)))
    t.same(outcomes.map((o) => o.outcome).sort(), ['changed', 'last_owner'], `${act}: one wins`)
    const owners = (await store.listMembers(org.id)).filter((m) => m.role === 'owner')
    t.equal(owners.length, 1, `${act}: one owner is left`)
  }
})

t.test('an invitation: its mail in the outbox, listed while pending, single use, bound to its address', async (t) => {
  const store = await testStore(t)
  const { owner, org } = await orgWithOwner(store)
  const carol = await newUser(store, 'carol@example.test')
  const mallory = await newUser(store, 'mallory@example.test')
  const now = new Date()
  const invitation = await store.createInvitation({ orgId: org.id, email: carol.email, role: 'admin', tokenHash: 'carol-token', invitedBy: owner.id, expiresAt: new Date(now.getTime() + 7 * DAY) },
    now, { to: carol.email, subject: 'Join Acme', text: 'https://id.example.test/invitations#token=x' })
  t.match(invitation, { orgId: org.id, email: carol.email, role: 'admin', usedAt: null, withdrawnAt: null })
  t.match(await store.claimMails(now, new Date(now.getTime() + 60_000), 10), [{ to: carol.email, subject: 'Join Acme' }], 'the mail was written with it')
  t.match(await store.listInvitations(org.id, now), [{ id: invitation.id }])
  t.match(await store.findInvitation('carol-token', now), { id: invitation.id, orgName: 'Acme', orgSlug: 'acme', inviterName: 'Ada owner-acme' })
  t.equal(await store.findInvitation('unknown', now), undefined)

  t.same(await store.acceptInvitation('carol-token', mallory, now), { outcome: 'mismatch' }, 'another account is refused')
  t.match(await store.findInvitation('carol-token', now), { id: invitation.id }, 'and the invitation stays usable')
  const accepted = await store.acceptInvitation('carol-token', { id: carol.id, email: 'Carol@Example.test' }, now,
    (m) => [event('org.member_added', m.userId, { role: m.role })])
  t.match(accepted, { outcome: 'accepted', org: { id: org.id, slug: 'acme' }, role: 'admin', added: true })
  t.match(await store.listSecurityEvents(carol.id, { limit: 10 }), [{ type: 'org.member_added', detail: { role: 'admin' } }])
  t.same(await store.acceptInvitation('carol-token', carol, now), { outcome: 'invalid' }, 'used once')
  t.same(await store.listInvitations(org.id, now), [], 'no longer pending')
})

t.test('a member already keeps its role; withdrawn and expired invitations are void', async (t) => {
  const store = await testStore(t)
  const { owner, org } = await orgWithOwner(store)
  const now = new Date()
  const invite = async (tokenHash: string, email: string, role: 'owner' | 'admin' | 'member', expiresAt = new Date(now.getTime() + DAY)) =>
    await store.createInvitation({ orgId: org.id, email, role, tokenHash, invitedBy: owner.id, expiresAt }, now, { to: email, subject: 's', text: 't' })
  await invite('again', owner.email, 'member')
  t.match(await store.acceptInvitation('again', owner, now), { outcome: 'accepted', role: 'owner', added: false }, 'the owner stays owner')

  const withdrawn = await invite('withdrawn', 'dan@example.test', 'member')
  t.equal(await store.withdrawInvitation(org.id + 1000, withdrawn.id, now), false, 'only through its own organisation')
  t.equal(await store.withdrawInvitation(org.id, withdrawn.id, now), true)
  t.equal(await store.withdrawInvitation(org.id, withdrawn.id, now), false, 'once')
  const dan = await newUser(store, 'dan@example.test')
  t.same(await store.acceptInvitation('withdrawn', dan, now), { outcome: 'invalid' })

  await invite('expiring', dan.email, 'member', new Date(now.getTime() + 1000))
  t.same(await store.acceptInvitation('expiring', dan, new Date(now.getTime() + 1000)), { outcome: 'invalid' }, 'expired')
  t.same(await store.listInvitations(org.id, new Date(now.getTime() + 1000)), [])
  t.equal(await store.membershipOf(org.id, dan.id), undefined)
})

t.test('deleting an organisation takes its memberships and invitations; deleting a user its memberships', async (t) => {
  const store = await testStore(t)
  const { owner, org } = await orgWithOwner(store)
  const { owner: other, org: kept } = await orgWithOwner(store, 'kept')
  await store.createInvitation({ orgId: org.id, email: 'x@example.test', role: 'member', tokenHash: 'gone', invitedBy: owner.id, expiresAt: new Date(Date.now() + DAY) },
    new Date(), { to: 'x@example.test', subject: 's', text: 't' })
  t.equal(await store.deleteOrganisation(org.id, [event('org.deleted', owner.id, { org_id: org.id })]), true)
  t.equal(await store.findOrganisation(org.id), undefined)
  t.same(await store.membershipsOfUser(owner.id), [])
  t.equal(await store.findInvitation('gone', new Date()), undefined)
  t.match(await store.listSecurityEvents(owner.id, { limit: 10 }), [{ type: 'org.deleted' }])
  t.equal(await store.deleteOrganisation(org.id), false, 'once')

  await store.deleteUser(other.id)
  t.same(await store.listMembers(kept.id), [], 'the user\'s membership went with it')
})

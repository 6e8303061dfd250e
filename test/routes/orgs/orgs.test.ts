import t, { type Test } from 'tap'
import type { Variant } from '../../../core/config.js'
import { build } from '../../fixtures/build.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { assertError } from '../../fixtures/assertions.js'
import { credentials, loggedInUser, type Session } from '../../fixtures/factories.js'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { eventually } from '../../fixtures/eventually.js'
import { startWebhookReceiver, WEBHOOK_SECRET } from '../../fixtures/webhook-receiver.js'

/*
 * /orgs (docs/organisations.md), both variants: create, list, read, rename, delete; members listed, re-roled,
 * removed, leaving; each role at its boundary; the last owner kept (two owners demoting each other at once too);
 * a non-member told nothing but 404.
 */

const ELEVEN_MINUTES = 11 * 60_000

interface World { server: FastifyInstance, clock: TestClock, variant: Variant }

async function setUp (t: Test, variant: Variant, env: Record<string, string> = {}): Promise<World> {
  const clock = testClock()
  const server = await build(t, { variant, clock, env })
  return { server, clock, variant }
}

function as ({ server, variant }: World, session: Session) {
  return async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: Record<string, unknown>): Promise<LightMyRequestResponse> =>
    await server.inject({ method, url, ...credentials(variant, session), ...(payload === undefined ? {} : { payload }) })
}

/** An organisation with an owner, an admin and a member (added in the store: invitations have their own test). */
async function team (world: World) {
  const owner = await loggedInUser(world.server, world.variant)
  const admin = await loggedInUser(world.server, world.variant)
  const member = await loggedInUser(world.server, world.variant)
  const outsider = await loggedInUser(world.server, world.variant)
  const created = await as(world, owner)('POST', '/orgs', { name: 'Acme Ltd' })
  const orgId: number = created.json().id
  const { store } = world.server
  for (const [session, role] of [[admin, 'admin'], [member, 'member']] as const) {
    const tokenHash = `join-${session.user.id}`
    await store.createInvitation({ orgId, email: session.user.email, role, tokenHash, invitedBy: owner.user.id, expiresAt: new Date(world.clock.now() + 60_000) },
      new Date(world.clock.now()), { to: session.user.email, subject: 'Join', text: 'link' })
    await store.acceptInvitation(tokenHash, { id: session.user.id, email: session.user.email }, new Date(world.clock.now()))
  }
  return { owner, admin, member, outsider, orgId }
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: an organisation is created, listed, read and renamed`, async (t) => {
    const world = await setUp(t, variant)
    const ada = await loggedInUser(world.server, variant)
    const created = await as(world, ada)('POST', '/orgs', { name: '  Café Crème & Co  ' })
    t.equal(created.statusCode, 201)
    const body = created.json()
    t.match(body, { name: 'Café Crème & Co', slug: 'cafe-creme-co', role: 'owner' }, 'the slug derived from the trimmed name')
    t.equal(typeof body.id, 'number')
    t.equal(new Date(body.created_at).getTime(), world.clock.now())

    const again = await as(world, ada)('POST', '/orgs', { name: 'Café Crème & Co' })
    t.equal(again.statusCode, 201, 'the same name again gets its own slug')
    t.match(again.json().slug, /^cafe-creme-co-[a-z0-9]{4}$/)
    assertError(t, await as(world, ada)('POST', '/orgs', { name: 'Other', slug: 'cafe-creme-co' }), 409, 'SLUG_TAKEN')
    for (const slug of ['ab', 'A-Upper', 'with space', 'x'.repeat(41), 'under_score']) {
      assertError(t, await as(world, ada)('POST', '/orgs', { name: 'Bad slug', slug }), 400, 'VALIDATION_FAILED')
    }
    assertError(t, await as(world, ada)('POST', '/orgs', { name: '   ' }), 400, 'VALIDATION_FAILED')
    assertError(t, await as(world, ada)('POST', '/orgs', {}), 400, 'VALIDATION_FAILED')
    assertError(t, await world.server.inject({ method: 'POST', url: '/orgs', payload: { name: 'No token' } }), 401, 'MISSING_TOKEN')

    const list = await as(world, ada)('GET', '/orgs')
    t.same(list.json(), { orgs: [{ id: body.id, name: 'Café Crème & Co', slug: 'cafe-creme-co', role: 'owner' }, { id: again.json().id, name: 'Café Crème & Co', slug: again.json().slug, role: 'owner' }] })
    t.match((await as(world, ada)('GET', `/orgs/${body.id as number}`)).json(), { id: body.id, slug: 'cafe-creme-co', role: 'owner' })

    const renamed = await as(world, ada)('PATCH', `/orgs/${body.id as number}`, { name: 'Crème', slug: 'creme' })
    t.equal(renamed.statusCode, 200)
    t.match(renamed.json(), { name: 'Crème', slug: 'creme', role: 'owner' })
    assertError(t, await as(world, ada)('PATCH', `/orgs/${body.id as number}`, { slug: again.json().slug }), 409, 'SLUG_TAKEN')
    assertError(t, await as(world, ada)('PATCH', `/orgs/${body.id as number}`, {}), 400, 'VALIDATION_FAILED')
    t.match(await world.server.store.listSecurityEvents(ada.user.id, { limit: 5 }), [{ type: 'org.created' }, { type: 'org.created' }])
  })

  t.test(`${variant} variant: a non-member gets 404 ORG_NOT_FOUND on every route, as for no organisation`, async (t) => {
    const world = await setUp(t, variant)
    const { outsider, orgId, member } = await team(world)
    const call = as(world, outsider)
    for (const id of [orgId, 999_999]) {
      for (const [method, url, payload] of [
        ['GET', `/orgs/${id}`], ['PATCH', `/orgs/${id}`, { name: 'Mine' }], ['DELETE', `/orgs/${id}`], ['GET', `/orgs/${id}/members`],
        ['PATCH', `/orgs/${id}/members/${member.user.id}`, { role: 'admin' }], ['DELETE', `/orgs/${id}/members/${member.user.id}`]
      ] as const) {
        assertError(t, await call(method, url, payload), 404, 'ORG_NOT_FOUND')
      }
    }
    t.same((await call('GET', '/orgs')).json(), { orgs: [] })
  })

  t.test(`${variant} variant: members are listed; each role acts up to its boundary`, async (t) => {
    const world = await setUp(t, variant)
    const { owner, admin, member, outsider, orgId } = await team(world)
    const members = await as(world, member)('GET', `/orgs/${orgId}/members`)
    t.equal(members.statusCode, 200)
    t.match(members.json().members, [
      { user_id: owner.user.id, email: owner.user.email, first_name: 'Ada', last_name: 'Lovelace', role: 'owner' },
      { user_id: admin.user.id, role: 'admin' },
      { user_id: member.user.id, role: 'member' }
    ])
    t.equal(members.json().members.length, 3)

    // A member: no rename, no role change, no removal of another.
    assertError(t, await as(world, member)('PATCH', `/orgs/${orgId}`, { name: 'Mine' }), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, member)('PATCH', `/orgs/${orgId}/members/${member.user.id}`, { role: 'admin' }), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, member)('DELETE', `/orgs/${orgId}/members/${admin.user.id}`), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, member)('DELETE', `/orgs/${orgId}`), 403, 'ORG_FORBIDDEN')

    // An admin: renames, re-roles members and admins, never gives or takes the owner role, never deletes.
    t.equal((await as(world, admin)('PATCH', `/orgs/${orgId}`, { name: 'Acme Group' })).statusCode, 200)
    assertError(t, await as(world, admin)('PATCH', `/orgs/${orgId}/members/${member.user.id}`, { role: 'owner' }), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, admin)('PATCH', `/orgs/${orgId}/members/${owner.user.id}`, { role: 'member' }), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, admin)('DELETE', `/orgs/${orgId}/members/${owner.user.id}`), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, admin)('DELETE', `/orgs/${orgId}`), 403, 'ORG_FORBIDDEN')
    const promoted = await as(world, admin)('PATCH', `/orgs/${orgId}/members/${member.user.id}`, { role: 'admin' })
    t.equal(promoted.statusCode, 200)
    t.match(promoted.json(), { user_id: member.user.id, role: 'admin', email: member.user.email })
    t.match(await world.server.store.listSecurityEvents(member.user.id, { limit: 5 }), [{ type: 'org.member_role_changed', detail: { org_id: orgId, role: 'admin', previous_role: 'member', by_user_id: admin.user.id } }])
    t.equal((await as(world, admin)('PATCH', `/orgs/${orgId}/members/${member.user.id}`, { role: 'member' })).statusCode, 200)
    assertError(t, await as(world, admin)('PATCH', `/orgs/${orgId}/members/${outsider.user.id}`, { role: 'admin' }), 404, 'ORG_NOT_FOUND')
    assertError(t, await as(world, admin)('PATCH', `/orgs/${orgId}/members/${member.user.id}`, { role: 'boss' }), 400, 'VALIDATION_FAILED')

    // The owner: gives the owner role and takes it.
    t.match((await as(world, owner)('PATCH', `/orgs/${orgId}/members/${admin.user.id}`, { role: 'owner' })).json(), { role: 'owner' })
    t.match((await as(world, owner)('PATCH', `/orgs/${orgId}/members/${admin.user.id}`, { role: 'admin' })).json(), { role: 'admin' })

    // Removal: an admin removes a member; the member is then told nothing of the organisation.
    t.equal((await as(world, admin)('DELETE', `/orgs/${orgId}/members/${member.user.id}`)).statusCode, 204)
    assertError(t, await as(world, member)('GET', `/orgs/${orgId}`), 404, 'ORG_NOT_FOUND')
    t.match(await world.server.store.listSecurityEvents(member.user.id, { limit: 1 }), [{ type: 'org.member_removed', detail: { by_user_id: admin.user.id, role: 'member' } }])
  })

  t.test(`${variant} variant: anyone may leave, except the last owner; the last owner is kept against demotion`, async (t) => {
    const world = await setUp(t, variant)
    const { owner, admin, member, orgId } = await team(world)
    t.equal((await as(world, member)('DELETE', `/orgs/${orgId}/members/${member.user.id}`)).statusCode, 204, 'a member leaves')
    t.same((await as(world, member)('GET', '/orgs')).json(), { orgs: [] })
    assertError(t, await as(world, owner)('DELETE', `/orgs/${orgId}/members/${owner.user.id}`), 409, 'LAST_OWNER')
    assertError(t, await as(world, owner)('PATCH', `/orgs/${orgId}/members/${owner.user.id}`, { role: 'admin' }), 409, 'LAST_OWNER')
    t.equal((await as(world, owner)('PATCH', `/orgs/${orgId}/members/${admin.user.id}`, { role: 'owner' })).statusCode, 200)
    t.equal((await as(world, owner)('DELETE', `/orgs/${orgId}/members/${owner.user.id}`)).statusCode, 204, 'with another owner, the owner leaves')
    assertError(t, await as(world, admin)('DELETE', `/orgs/${orgId}/members/${admin.user.id}`), 409, 'LAST_OWNER')
  })

  t.test(`${variant} variant: two owners demoting each other at once leave one owner`, async (t) => {
    const world = await setUp(t, variant)
    const { owner, admin, orgId } = await team(world)
    t.equal((await as(world, owner)('PATCH', `/orgs/${orgId}/members/${admin.user.id}`, { role: 'owner' })).statusCode, 200)
    const [first, second] = await Promise.all([
      as(world, owner)('PATCH', `/orgs/${orgId}/members/${admin.user.id}`, { role: 'member' }),
      as(world, admin)('PATCH', `/orgs/${orgId}/members/${owner.user.id}`, { role: 'member' })
    ])
    const statuses = [first.statusCode, second.statusCode].sort()
    // The first demotion wins; the second finds its author no longer an owner (403) or the last owner left (409).
    t.equal(statuses[0], 200, 'one demotion is made')
    t.ok([403, 409].includes(statuses[1]), `the other is refused (${statuses[1]})`)
    const owners = (await world.server.store.listMembers(orgId)).filter((m) => m.role === 'owner')
    t.equal(owners.length, 1, 'one owner is left')
  })

  t.test(`${variant} variant: an owner deletes the organisation in a fresh session`, async (t) => {
    const world = await setUp(t, variant)
    const { owner, admin, orgId } = await team(world)
    world.clock.advance(ELEVEN_MINUTES)
    assertError(t, await as(world, owner)('DELETE', `/orgs/${orgId}`), 403, 'REAUTHENTICATION_REQUIRED')
    const reauth = await as(world, owner)('POST', '/auth/reauthenticate', { password: owner.user.password })
    t.equal(reauth.statusCode, 204, reauth.body)
    const deleted = await as(world, owner)('DELETE', `/orgs/${orgId}`)
    t.equal(deleted.statusCode, 204)
    t.equal(deleted.body, '')
    assertError(t, await as(world, owner)('GET', `/orgs/${orgId}`), 404, 'ORG_NOT_FOUND')
    t.same((await as(world, admin)('GET', '/orgs')).json(), { orgs: [] }, 'its members are members no more')
    t.match(await world.server.store.listSecurityEvents(owner.user.id, { limit: 1 }), [{ type: 'org.deleted', detail: { org_id: orgId } }])
  })

  t.test(`${variant} variant: a deleted user's memberships go with it`, async (t) => {
    const world = await setUp(t, variant)
    const { member, orgId } = await team(world)
    await world.server.store.deleteUser(member.user.id)
    t.notOk((await world.server.store.listMembers(orgId)).some((m) => m.userId === member.user.id))
  })
}

t.test('each change of an organisation is sent as a signed webhook with its data', async (t) => {
  const receiver = await startWebhookReceiver(t)
  const world = await setUp(t, 'header', { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET })
  const { owner, admin, member, orgId } = await team(world)
  t.equal((await as(world, owner)('PATCH', `/orgs/${orgId}/members/${member.user.id}`, { role: 'admin' })).statusCode, 200)
  t.equal((await as(world, admin)('DELETE', `/orgs/${orgId}/members/${admin.user.id}`)).statusCode, 204)
  t.equal((await as(world, owner)('DELETE', `/orgs/${orgId}`)).statusCode, 204)
  t.ok(await eventually(() => receiver.ofType('org.deleted').length === 1), 'delivered')
  t.match(receiver.ofType('org.created'), [{ data: { user_id: owner.user.id, org_id: orgId, slug: 'acme-ltd', name: 'Acme Ltd' } }])
  t.match(receiver.ofType('org.member_role_changed'), [{ data: { user_id: member.user.id, org_id: orgId, role: 'admin', previous_role: 'member', by_user_id: owner.user.id } }])
  t.match(receiver.ofType('org.member_removed'), [{ data: { user_id: admin.user.id, org_id: orgId, role: 'admin', by_user_id: admin.user.id } }])
  t.match(receiver.ofType('org.deleted'), [{ data: { user_id: owner.user.id, org_id: orgId, slug: 'acme-ltd' } }])
  t.same(receiver.unverified, [])
})

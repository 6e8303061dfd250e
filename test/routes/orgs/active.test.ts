import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { LightMyRequestResponse } from 'fastify'
import { build } from '../../fixtures/build.js'
import { assertError } from '../../fixtures/assertions.js'
import { storeCallsDuring } from '../../fixtures/store-calls.js'
import { cookieValue, credentials, loggedInUser, type Session } from '../../fixtures/factories.js'

const DAY = 24 * 3600 * 1000

/** What an access token says, read as an API that verified it would (the signature is the routes' business). */
function claimsIn (accessToken: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>
}

/** `member` joins the organisation of `owner` with `role`, as an accepted invitation makes it. */
async function join (server: FastifyInstance, orgId: number, owner: Session, member: Session, role: 'admin' | 'member') {
  const tokenHash = `invitation-${orgId}-${member.user.id}`
  await server.store.createInvitation({ orgId, email: member.user.email, role, tokenHash, invitedBy: owner.user.id, expiresAt: new Date(Date.now() + DAY) },
    new Date(), { to: member.user.email, subject: 'Join', text: 'Join' })
  t.match(await server.store.acceptInvitation(tokenHash, { id: member.user.id, email: member.user.email }, new Date()), { outcome: 'accepted' })
}

for (const variant of ['header', 'cookie'] as const) {
  /** The access token an answer hands over: the body's, and in the cookie variant the same in the cookie (cookieValue throws without it). */
  function handedOver (response: LightMyRequestResponse): string {
    const { accessToken } = response.json() as { accessToken: string }
    if (variant === 'cookie' && cookieValue(response, 'accessToken') !== accessToken) throw new Error('the cookie does not carry the new access token')
    return accessToken
  }

  /** Refreshes the session and keeps its tokens current (the cookie variant rotates the refresh token). */
  async function refresh (server: FastifyInstance, session: Session): Promise<Record<string, unknown>> {
    const response = await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) })
    t.equal(response.statusCode, 200, response.body)
    session.accessToken = handedOver(response)
    if (variant === 'cookie') session.refreshToken = cookieValue(response, 'refreshToken')
    return claimsIn(session.accessToken)
  }

  t.test(`${variant} variant: the active organisation in the access token`, async (t) => {
    const server = await build(t, { variant })
    const owner = await loggedInUser(server, variant)
    const member = await loggedInUser(server, variant)
    const created = await server.inject({ method: 'POST', url: '/orgs', payload: { name: 'Acme', slug: 'acme' }, ...credentials(variant, owner) })
    t.equal(created.statusCode, 201, created.body)
    const org = created.json() as { id: number }
    await join(server, org.id, owner, member, 'admin')

    t.test('activate answers with a token carrying org, kept by refresh with the current role; gone after removal', async (t) => {
      const activated = await server.inject({ method: 'POST', url: `/orgs/${org.id}/activate`, ...credentials(variant, member) })
      t.equal(activated.statusCode, 200, activated.body)
      member.accessToken = handedOver(activated)
      t.same(claimsIn(member.accessToken).org, { id: org.id, slug: 'acme', role: 'admin' })
      t.equal(claimsIn(member.accessToken).sub, String(member.user.id))

      const read = await server.inject({ method: 'GET', url: `/users/${member.user.id}`, ...credentials(variant, member) })
      t.equal(read.statusCode, 200, 'the token with org is good on the API')

      t.same((await refresh(server, member)).org, { id: org.id, slug: 'acme', role: 'admin' }, 'a refresh keeps it')

      const demoted = await server.inject({ method: 'PATCH', url: `/orgs/${org.id}/members/${member.user.id}`, payload: { role: 'member' }, ...credentials(variant, owner) })
      t.ok(demoted.statusCode < 300, `the owner re-roles the member: ${demoted.statusCode}`)
      t.same((await refresh(server, member)).org, { id: org.id, slug: 'acme', role: 'member' }, 'the next refresh shows the new role')

      const removed = await server.inject({ method: 'DELETE', url: `/orgs/${org.id}/members/${member.user.id}`, ...credentials(variant, owner) })
      t.equal(removed.statusCode, 204, removed.body)
      t.equal((await refresh(server, member)).org, undefined, 'after removal the next refresh has no org')
      t.equal((await refresh(server, member)).org, undefined, 'nor any later one')
    })

    t.test('deactivate drops it from the token and from later refreshes', async (t) => {
      const activated = await server.inject({ method: 'POST', url: `/orgs/${org.id}/activate`, ...credentials(variant, owner) })
      owner.accessToken = handedOver(activated)
      t.same(claimsIn(owner.accessToken).org, { id: org.id, slug: 'acme', role: 'owner' })
      const deactivated = await server.inject({ method: 'POST', url: '/orgs/deactivate', ...credentials(variant, owner) })
      t.equal(deactivated.statusCode, 200, deactivated.body)
      owner.accessToken = handedOver(deactivated)
      t.equal(claimsIn(owner.accessToken).org, undefined)
      t.equal(claimsIn(owner.accessToken).sid, claimsIn(activated.json().accessToken).sid, 'the same session')
      t.equal((await refresh(server, owner)).org, undefined)
    })

    t.test('a deleted organisation is gone from the next refresh', async (t) => {
      const other = await loggedInUser(server, variant)
      const own = await server.store.createOrganisation({ name: 'Short-lived', slug: `short-${variant}`, ownerId: other.user.id }, new Date())
      other.accessToken = handedOver(await server.inject({ method: 'POST', url: `/orgs/${own.id}/activate`, ...credentials(variant, other) }))
      t.match(claimsIn(other.accessToken).org, { id: own.id, role: 'owner' })
      t.ok(await server.store.deleteOrganisation(own.id))
      t.equal((await refresh(server, other)).org, undefined)
    })

    t.test('the claim costs no store read: GET /users/:id and a refresh make the same calls with an active organisation as without', async (t) => {
      const plain = await loggedInUser(server, variant)
      const active = await loggedInUser(server, variant)
      const own = await server.store.createOrganisation({ name: 'Counted', slug: `counted-${variant}`, ownerId: active.user.id }, new Date())
      active.accessToken = handedOver(await server.inject({ method: 'POST', url: `/orgs/${own.id}/activate`, ...credentials(variant, active) }))
      const read = (session: Session) => server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(variant, session) })
      await read(plain)
      await read(active)
      t.same(await storeCallsDuring(t, () => read(active)), await storeCallsDuring(t, () => read(plain)), 'GET /users/:id')
      await refresh(server, plain)
      await refresh(server, active)
      const withOrg = await storeCallsDuring(t, () => refresh(server, active))
      t.same(withOrg, await storeCallsDuring(t, () => refresh(server, plain)), 'a refresh')
      t.notOk(withOrg.includes('membershipsOfUser') || withOrg.includes('membershipOf'), 'no membership read of its own')
      t.match((claimsIn(active.accessToken).org as { id: number }).id, own.id, 'and the refreshed token has the org')
    })

    t.test('a non-member, or an organisation that does not exist, is 404 ORG_NOT_FOUND', async (t) => {
      const stranger = await loggedInUser(server, variant)
      assertError(t, await server.inject({ method: 'POST', url: `/orgs/${org.id}/activate`, ...credentials(variant, stranger) }), 404, 'ORG_NOT_FOUND')
      assertError(t, await server.inject({ method: 'POST', url: '/orgs/999999/activate', ...credentials(variant, stranger) }), 404, 'ORG_NOT_FOUND')
      t.equal((await refresh(server, stranger)).org, undefined, 'the session has no active organisation')
    })

    t.test('without an access token it is 401; a malformed id is 400', async (t) => {
      assertError(t, await server.inject({ method: 'POST', url: `/orgs/${org.id}/activate` }), 401, 'MISSING_TOKEN')
      assertError(t, await server.inject({ method: 'POST', url: '/orgs/deactivate' }), 401, 'MISSING_TOKEN')
      assertError(t, await server.inject({ method: 'POST', url: '/orgs/abc/activate', ...credentials(variant, owner) }), 400, 'VALIDATION_FAILED')
    })
  })
}

import t from 'tap'
import { build } from '../../fixtures/build.js'
import { adminRequest, adminSession } from '../../fixtures/admin.js'
import { assertError } from '../../fixtures/assertions.js'
import { credentials, loggedInUser, registerUser } from '../../fixtures/factories.js'

const DAY = 24 * 3600 * 1000

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: the operators' organisations`, async (t) => {
    const server = await build(t, { variant })
    const admin = await adminSession(server, variant)
    const ada = await registerUser(server, variant, { first_name: 'Ada', last_name: 'Lovelace' })
    const bob = await registerUser(server, variant, { first_name: 'Bob', last_name: 'Builder' })
    const now = new Date()
    const acme = await server.store.createOrganisation({ name: 'Acme Rockets', slug: 'acme', ownerId: ada.id }, now)
    const globex = await server.store.createOrganisation({ name: 'Globex', slug: 'globex-corp', ownerId: bob.id }, now)
    const initech = await server.store.createOrganisation({ name: 'Initech', slug: 'initech', ownerId: bob.id }, now)
    await server.store.createInvitation({ orgId: acme.id, email: bob.email, role: 'member', tokenHash: 'bob-acme', invitedBy: ada.id, expiresAt: new Date(Date.now() + DAY) },
      now, { to: bob.email, subject: 'Join', text: 'Join' })
    await server.store.acceptInvitation('bob-acme', bob, now)

    t.test('GET /admin/orgs searches by name or slug and pages like GET /admin/users', async (t) => {
      const all = await adminRequest(server, variant, admin, 'GET', '/admin/orgs')
      t.equal(all.statusCode, 200, all.body)
      t.equal(all.headers['cache-control'], 'no-store')
      t.same(all.json().orgs.map((org: { id: number }) => org.id), [acme.id, globex.id, initech.id])
      t.same(all.json().orgs[0], { id: acme.id, name: 'Acme Rockets', slug: 'acme', member_count: 2, created_at: now.toISOString() })
      t.equal(all.json().next_cursor, null)

      t.same((await adminRequest(server, variant, admin, 'GET', '/admin/orgs?query=ROCKET')).json().orgs.map((org: { slug: string }) => org.slug), ['acme'], 'by name')
      t.same((await adminRequest(server, variant, admin, 'GET', '/admin/orgs?query=corp')).json().orgs.map((org: { slug: string }) => org.slug), ['globex-corp'], 'by slug')

      const first = await adminRequest(server, variant, admin, 'GET', '/admin/orgs?limit=2')
      t.equal(first.json().next_cursor, String(globex.id))
      const second = await adminRequest(server, variant, admin, 'GET', `/admin/orgs?limit=2&cursor=${first.json().next_cursor as string}`)
      t.same(second.json().orgs.map((org: { id: number }) => org.id), [initech.id])
      t.equal(second.json().next_cursor, null)
      for (const bad of ['limit=0', 'cursor=abc', 'cursor=99999999999', 'unknown=1']) {
        assertError(t, await adminRequest(server, variant, admin, 'GET', `/admin/orgs?${bad}`), 400, 'VALIDATION_FAILED')
      }
    })

    t.test('GET /admin/orgs/:orgId shows it with its members; an unknown one is 404 ORG_NOT_FOUND', async (t) => {
      const details = await adminRequest(server, variant, admin, 'GET', `/admin/orgs/${acme.id}`)
      t.equal(details.statusCode, 200, details.body)
      t.match(details.json(), { id: acme.id, name: 'Acme Rockets', slug: 'acme', member_count: 2, updated_at: String })
      t.match(details.json().members, [
        { user_id: ada.id, email: ada.email, first_name: 'Ada', last_name: 'Lovelace', role: 'owner', joined_at: String },
        { user_id: bob.id, email: bob.email, first_name: 'Bob', last_name: 'Builder', role: 'member', joined_at: String }
      ])
      assertError(t, await adminRequest(server, variant, admin, 'GET', '/admin/orgs/999999'), 404, 'ORG_NOT_FOUND')
      assertError(t, await adminRequest(server, variant, admin, 'GET', '/admin/orgs/abc'), 400, 'VALIDATION_FAILED')
    })

    t.test('a non-admin is refused, even as the organisation\'s owner; no session is 401', async (t) => {
      const owner = await loggedInUser(server, variant)
      const owned = await server.store.createOrganisation({ name: 'Mine', slug: 'mine', ownerId: owner.user.id }, new Date())
      assertError(t, await server.inject({ method: 'GET', url: '/admin/orgs', ...credentials(variant, owner) }), 403, 'FORBIDDEN')
      assertError(t, await server.inject({ method: 'GET', url: `/admin/orgs/${owned.id}`, ...credentials(variant, owner) }), 403, 'FORBIDDEN')
      t.equal((await server.inject({ method: 'GET', url: '/admin/orgs' })).statusCode, 401)
    })
  })
}

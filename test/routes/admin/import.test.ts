import t from 'tap'
import { adminRequest, adminSession } from '../../fixtures/admin.js'
import { build } from '../../fixtures/build.js'
import { credentials, loggedInUser } from '../../fixtures/factories.js'
import { bcryptHash } from '../../fixtures/foreign-hashes.js'

// POST /admin/users/import through the admin API: admins only, an NDJSON body streamed in, the summary,
// the audit trail, and the imported user's first login with the old hash.

for (const variant of ['header', 'cookie'] as const) {
  t.test(`an admin imports NDJSON; a bad line is skipped; the import is in the audit trail; a non-admin is refused (${variant} variant)`, async (t) => {
    const server = await build(t, { variant })
    const admin = await adminSession(server, variant)
    const lines = [
      { email: 'Imported@Example.com', first_name: 'Ima', last_name: 'Port', password_hash: bcryptHash('an old password 1999'), ...(variant === 'cookie' ? { username: 'imported' } : {}) },
      { email: 'not an email', first_name: 'Bad', last_name: 'Line' }
    ].map(line => JSON.stringify(line)).join('\n')
    const headers = { 'content-type': 'application/x-ndjson' }
    const session = credentials(variant, admin)
    const answer = await server.inject({ method: 'POST', url: '/admin/users/import', payload: lines, ...session, headers: { ...session.headers, ...headers } })
    t.equal(answer.statusCode, 200, answer.body)
    t.match(answer.json(), { imported: 1, skipped: [{ line: 2, reason: String }] })

    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'imported@example.com', password: 'an old password 1999' } })
    t.equal(login.statusCode, 200, 'the old bcrypt hash verifies the first login')
    t.match((await server.store.findUserByEmail('imported@example.com'))?.passwordHash, /^\$argon2id\$/, 'and is replaced by Argon2id')

    const trail = await adminRequest(server, variant, admin, 'GET', '/admin/events?type=users_imported')
    t.match(trail.json(), { events: [{ type: 'users_imported', actor_id: admin.user.id }] })

    const other = await loggedInUser(server, variant)
    const otherCredentials = credentials(variant, other)
    const refused = await server.inject({ method: 'POST', url: '/admin/users/import', payload: lines, ...otherCredentials, headers: { ...otherCredentials.headers, ...headers } })
    t.equal(refused.statusCode, 403)
    t.equal(refused.json().code, 'FORBIDDEN')
  })
}

import t from 'tap'
import { build } from '../../fixtures/build.js'
import { adminRequest, adminSession } from '../../fixtures/admin.js'
import { credentials, logIn, loggedInUser, registerUser } from '../../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../../fixtures/mailbox.js'
import { enableTotp } from '../../fixtures/mfa.js'

const PUBLIC_URL = 'https://accounts.example.com'
const USER_FIELDS = ['created_at', 'disabled', 'email', 'email_verified', 'first_name', 'id', 'last_login_at', 'last_name', 'role', 'username']

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: GET /admin/users searches and pages, never shows a hash`, async (t) => {
    const server = await build(t, { variant })
    const admin = await adminSession(server, variant)
    const grace = await registerUser(server, variant, { first_name: 'Grace', last_name: 'Hopper', email: 'grace@navy.example' })
    const others = [await registerUser(server, variant), await registerUser(server, variant)]

    const all = await adminRequest(server, variant, admin, 'GET', '/admin/users')
    t.equal(all.statusCode, 200)
    t.equal(all.headers['cache-control'], 'no-store')
    t.same(all.json().users.map((user: { id: number }) => user.id), [admin.user.id, grace.id, ...others.map(user => user.id)])
    t.equal(all.json().next_cursor, null, 'one page: no cursor')
    const shown = all.json().users[0]
    t.same(Object.keys(shown).sort(), USER_FIELDS, 'the fields of a user, no hash')
    t.match(shown, { role: 'admin', disabled: false, email_verified: false, last_login_at: String })
    t.notMatch(all.body, /argon2|password/i)

    const found = await adminRequest(server, variant, admin, 'GET', '/admin/users?query=HOPPER')
    t.same(found.json().users.map((user: { email: string }) => user.email), ['grace@navy.example'], 'by name, ignoring case')
    t.match(found.json().users[0], { first_name: 'Grace', last_name: 'Hopper', role: 'user', last_login_at: null })

    const first = await adminRequest(server, variant, admin, 'GET', '/admin/users?limit=2')
    t.equal(first.json().users.length, 2)
    t.equal(first.json().next_cursor, String(grace.id))
    const second = await adminRequest(server, variant, admin, 'GET', `/admin/users?limit=2&cursor=${first.json().next_cursor as string}`)
    t.same(second.json().users.map((user: { id: number }) => user.id), others.map(user => user.id))
    t.equal(second.json().next_cursor, null)
    for (const bad of ['limit=0', 'limit=201', 'cursor=abc', 'cursor=0', 'unknown=1']) {
      const refused = await adminRequest(server, variant, admin, 'GET', `/admin/users?${bad}`)
      t.equal(refused.statusCode, 400, `${bad}: 400`)
      t.equal(refused.json().code, 'VALIDATION_FAILED')
    }
  })

  t.test(`${variant} variant: GET /admin/users/:id shows sessions, identities and second factors`, async (t) => {
    const server = await build(t, { variant })
    const admin = await adminSession(server, variant)
    const user = await loggedInUser(server, variant)
    await enableTotp(server, variant, user)
    const details = await adminRequest(server, variant, admin, 'GET', `/admin/users/${user.user.id}`)
    t.equal(details.statusCode, 200, details.body)
    t.match(details.json(), { id: user.user.id, email: user.user.email, identities: [], app_sessions: [], second_factors: { totp: true, passkeys: [] } })
    t.equal(details.json().sessions.length, 1, 'the live session')
    t.match(details.json().sessions[0], { id: String, created_at: String, last_used_at: String, authenticated_at: String })
    t.notMatch(details.body, /hash|secret/i)
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users/999999')).json().code, 'USER_NOT_FOUND')
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users/abc')).statusCode, 400)
  })

  t.test(`${variant} variant: POST /admin/users creates a user without a password and invites it by mail`, async (t) => {
    const mailbox = await startMailbox(t)
    const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
    const admin = await adminSession(server, variant)
    const body = { first_name: 'Katherine', last_name: 'Johnson', email: ' Katherine@NASA.example ', ...(variant === 'cookie' ? { username: 'kjohnson' } : {}) }
    const created = await adminRequest(server, variant, admin, 'POST', '/admin/users', { ...body, invite: true })
    t.equal(created.statusCode, 201, created.body)
    t.match(created.json(), { email: 'katherine@nasa.example', role: 'user', disabled: false, username: variant === 'cookie' ? 'kjohnson' : null })
    const id = created.json().id as number
    t.equal((await server.store.findUserById(id))?.passwordHash, null, 'no password until the invitation is used')

    const mail = await mailbox.next('katherine@nasa.example')
    t.match(mail.subject, /invited/i)
    const token = tokenFromLink(mail, PUBLIC_URL, '/reset-password')
    const set = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'orbital mechanics 1962' } })
    t.equal(set.statusCode, 204, set.body)
    const session = await logIn(server, variant, { id, email: 'katherine@nasa.example', password: 'orbital mechanics 1962', body: {} })
    t.equal(session.response.statusCode, 200, 'the invited user signs in with the password it chose')

    const duplicate = await adminRequest(server, variant, admin, 'POST', '/admin/users', { ...body, ...(variant === 'cookie' ? { username: 'another' } : {}) })
    t.equal(duplicate.statusCode, 409)
    t.equal(duplicate.json().code, 'EMAIL_TAKEN')
    const another = await adminRequest(server, variant, admin, 'POST', '/admin/users',
      { first_name: 'Dorothy', last_name: 'Vaughan', email: 'dorothy@nasa.example', role: 'admin', ...(variant === 'cookie' ? { username: 'dvaughan' } : {}) })
    t.equal(another.statusCode, 201, 'no invitation asked: none sent')
    t.equal(another.json().role, 'admin', 'a role may be given')
    const incomplete = await adminRequest(server, variant, admin, 'POST', '/admin/users', { first_name: 'No', email: 'no@example.com' })
    t.equal(incomplete.statusCode, 400)
    t.equal(incomplete.json().code, 'VALIDATION_FAILED')
    if (variant === 'cookie') {
      const noUsername = await adminRequest(server, variant, admin, 'POST', '/admin/users', { first_name: 'No', last_name: 'Name', email: 'no@example.com' })
      t.equal(noUsername.statusCode, 400, 'the cookie variant\'s users have a username')
    }
    const events = await adminRequest(server, variant, admin, 'GET', `/admin/events?type=admin_user_created&user=${id}`)
    t.match(events.json().events, [{ type: 'admin_user_created', user_id: id, actor_id: admin.user.id, detail: { invited: true } }])
  })

  t.test(`${variant} variant: sessions, second factor and deletion, each an audited admin action`, async (t) => {
    const server = await build(t, { variant })
    const admin = await adminSession(server, variant)
    const user = await loggedInUser(server, variant)
    await enableTotp(server, variant, user)
    const me = () => server.inject({ method: 'GET', url: `/users/${user.user.id}`, ...credentials(variant, user) })

    t.equal((await adminRequest(server, variant, admin, 'DELETE', `/admin/users/${user.user.id}/mfa`)).statusCode, 204)
    t.equal((await server.store.findTotp(user.user.id)), undefined, 'TOTP is off')
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.user.email, password: user.user.password } })
    t.equal(login.statusCode, 200, 'the next login asks for the password only')

    t.equal((await adminRequest(server, variant, admin, 'DELETE', `/admin/users/${user.user.id}/sessions`)).statusCode, 204)
    t.equal((await me()).json().code, 'SESSION_REVOKED', 'every session ended at once')
    t.equal((await adminRequest(server, variant, admin, 'GET', `/admin/users/${user.user.id}`)).json().sessions.length, 0)

    t.equal((await adminRequest(server, variant, admin, 'POST', `/admin/users/${user.user.id}/disable`)).statusCode, 204)
    t.equal((await adminRequest(server, variant, admin, 'GET', `/admin/users/${user.user.id}`)).json().disabled, true)
    t.equal((await adminRequest(server, variant, admin, 'POST', `/admin/users/${user.user.id}/enable`)).statusCode, 204)
    t.equal((await adminRequest(server, variant, admin, 'DELETE', `/admin/users/${user.user.id}`)).statusCode, 204)
    t.equal(await server.store.findUserById(user.user.id), undefined, 'deleted')

    for (const [method, url] of [['POST', '/admin/users/999999/disable'], ['POST', '/admin/users/999999/enable'], ['DELETE', '/admin/users/999999/sessions'],
      ['DELETE', '/admin/users/999999/mfa'], ['DELETE', '/admin/users/999999']] as const) {
      const missing = await adminRequest(server, variant, admin, method, url)
      t.equal(missing.statusCode, 404, `${method} ${url}: 404`)
      t.equal(missing.json().code, 'USER_NOT_FOUND')
    }

    const trail = await adminRequest(server, variant, admin, 'GET', '/admin/events?limit=200')
    t.equal(trail.statusCode, 200)
    const byAdmin = trail.json().events.filter((event: { actor_id: number | null }) => event.actor_id === admin.user.id)
    t.same(byAdmin.map((event: { type: string }) => event.type),
      ['admin_user_deleted', 'account_enabled', 'account_disabled', 'admin_sessions_revoked', 'admin_mfa_reset'], 'every admin action, newest first, with its actor')
    t.match(byAdmin[0], { user_id: null, detail: { user_id: user.user.id, email: user.user.email } }, 'the deletion\'s row outlives the user')
    t.ok(byAdmin.every((event: { user_id: number | null, detail: { user_id: number } }) => event.user_id === null && event.detail.user_id === user.user.id),
      'so do the admin\'s earlier actions on it, with user_id null and the id in detail')
    t.ok(trail.json().events.some((event: { type: string, user_id: number }) => event.type === 'login' && event.user_id === admin.user.id), 'users\' own events too')
    const logins = await adminRequest(server, variant, admin, 'GET', `/admin/events?type=login&user=${admin.user.id}`)
    t.ok(logins.json().events.length > 0)
    t.ok(logins.json().events.every((event: { type: string, user_id: number, actor_id: null }) => event.type === 'login' && event.user_id === admin.user.id && event.actor_id === null))
    const older = await adminRequest(server, variant, admin, 'GET', `/admin/events?before=${byAdmin[0].id as number}&limit=1`)
    t.equal(older.json().events.length, 1)
    t.ok(older.json().events[0].id < byAdmin[0].id, 'before pages back')
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/events?type=nonsense')).statusCode, 400)
  })
}

t.test('with both variants mounted, /admin takes the token of the pages\' API mount (the cookie variant)', async (t) => {
  const server = await build(t, { mounts: [{ variant: 'header', prefix: '/a' }, { variant: 'cookie', prefix: '' }] })
  const cookieAdmin = await adminSession(server, 'cookie')
  t.equal((await adminRequest(server, 'cookie', cookieAdmin, 'GET', '/admin/users')).statusCode, 200)
  const headerAdmin = await adminSession(server, 'header', '/a')
  t.equal((await adminRequest(server, 'header', headerAdmin, 'GET', '/admin/users')).statusCode, 401, 'a bearer token is not what this mount carries')
})

t.test('the OpenAPI document lists every admin route under the admin tag with its own security scheme', async (t) => {
  const server = await build(t, { variant: 'header' })
  const document = (await server.inject({ method: 'GET', url: '/openapi.json' })).json()
  t.ok(document.components.securitySchemes.adminBearerAuth)
  t.ok(document.components.securitySchemes.adminAccessTokenCookie)
  const operations = Object.entries(document.paths as Record<string, Record<string, { tags: string[], security: unknown }>>)
    .filter(([path]) => path.startsWith('/admin'))
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ route: `${method} ${path}`, ...operation })))
  t.equal(operations.length, 12, operations.map(operation => operation.route).join(', '))
  for (const operation of operations) {
    t.same(operation.tags, ['admin'], operation.route)
    t.same(operation.security, [{ adminBearerAuth: [] }], operation.route)
  }
})

import t from 'tap'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser, logIn } from '../fixtures/factories.js'
import { startMailbox } from '../fixtures/mailbox.js'
import { codeAt, enableTotp, mfaToken, verify } from '../fixtures/mfa.js'

/*
 * Issue 33, finding 14: an admin's reset of a user's second factor mailed the owner nothing; an admin
 * could disable, end the sessions of, or reset the second factor of another admin (one stolen admin
 * session locked every other admin out); and the last admin could disable itself.
 */

const variant = 'header'

t.test('an admin\'s reset of a user\'s second factor is mailed to the owner', async (t) => {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl } })
  const admin = await adminSession(server, variant)
  const user = await loggedInUser(server, variant)
  await enableTotp(server, variant, user)
  t.equal((await adminRequest(server, variant, admin, 'DELETE', `/admin/users/${user.user.id}/mfa`)).statusCode, 204)
  const mail = await mailbox.next(user.user.email, 'An administrator turned off two-step sign-in')
  t.match(mail.text, /administrator turned off the authenticator app/)
  t.match(mail.text, /If it was not you/)
  t.equal((await logIn(server, variant, user.user)).response.statusCode, 200, 'the password alone signs in now')
})

t.test('an admin may not disable, delete, end the sessions of, or reset another admin: 409 TARGET_IS_ADMIN', async (t) => {
  const server = await build(t, { variant })
  const rogue = await adminSession(server, variant)
  const other = await adminSession(server, variant)
  const { secret } = await enableTotp(server, variant, other)
  const otherSession = await verify(server, await mfaToken(server, other.user), codeAt(secret, 1))
  const tokens = { accessToken: otherSession.json().accessToken, refreshToken: otherSession.json().refreshToken }

  for (const [method, path] of [['POST', 'disable'], ['DELETE', 'sessions'], ['DELETE', 'mfa'], ['DELETE', '']] as const) {
    const refused = await adminRequest(server, variant, rogue, method, `/admin/users/${other.user.id}${path === '' ? '' : `/${path}`}`)
    assertError(t, refused, 409, 'TARGET_IS_ADMIN')
    t.match(refused.json().message, /demote/)
  }
  t.equal((await server.inject({ method: 'GET', url: `/users/${other.user.id}`, ...credentials(variant, tokens) })).statusCode, 200, 'the other admin is still signed in')
  t.match(await server.store.findUserById(other.user.id), { disabledAt: null, role: 'admin' })
  t.equal((await mfaToken(server, other.user)).length > 0, true, 'its TOTP is still on')

  // Once the operator demotes it, it is a user like any other.
  await server.admin.changeRole({ adminId: null, client: { ip: null, userAgent: 'test', requestId: null } }, other.user.id, 'user')
  t.equal((await adminRequest(server, variant, rogue, 'POST', `/admin/users/${other.user.id}/disable`)).statusCode, 204)
})

t.test('the last enabled admin may not disable, delete or demote itself: 409 LAST_ADMIN; with another admin it may', async (t) => {
  const server = await build(t, { variant })
  const only = await adminSession(server, variant)
  const client = { ip: null, userAgent: 'test', requestId: null }
  assertError(t, await adminRequest(server, variant, only, 'POST', `/admin/users/${only.user.id}/disable`), 409, 'LAST_ADMIN')
  assertError(t, await adminRequest(server, variant, only, 'DELETE', `/admin/users/${only.user.id}`), 409, 'LAST_ADMIN')
  await t.rejects(server.admin.changeRole({ adminId: only.user.id, client }, only.user.id, 'user'), { code: 'LAST_ADMIN' })
  t.match(await server.store.findUserById(only.user.id), { disabledAt: null, role: 'admin' })
  t.equal((await adminRequest(server, variant, only, 'DELETE', `/admin/users/${only.user.id}/sessions`)).statusCode, 204, 'ending its own sessions is its own affair')

  const again = await logIn(server, variant, only.user)
  const second = await adminSession(server, variant)
  // A disabled admin counts for nothing: the second one, disabled by the operator, leaves `again` the last.
  await server.store.disableUser(second.user.id, new Date())
  assertError(t, await adminRequest(server, variant, again, 'POST', `/admin/users/${again.user.id}/disable`), 409, 'LAST_ADMIN')
  await server.store.enableUser(second.user.id, new Date())
  t.equal((await server.admin.changeRole({ adminId: again.user.id, client }, again.user.id, 'user')).changed, true, 'with another admin it may step down')
})

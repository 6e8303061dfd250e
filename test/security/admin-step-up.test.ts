import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser, logIn, type RegisteredUser, type Session } from '../fixtures/factories.js'
import { addPasskey, codeAt, enableTotp, mfaToken, verify } from '../fixtures/mfa.js'

/*
 * Issue 33, finding 3: with ADMIN_REQUIRE_MFA, /admin asked whether the account owned a second factor, not
 * whether the session used one. A passkey-only admin signs in with the password alone, so a password thief
 * opened /admin (and, fresh from that login, disabled users and made admins). Now the session must have
 * used a second factor (TOTP or a recovery code after the password, a passkey), at its sign-in or by a step-up.
 */

const variant = 'header'
const env = { ADMIN_REQUIRE_MFA: 'true' }

async function passkeyOptions (server: FastifyInstance) {
  return (await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
}

function sessionOf (user: RegisteredUser, response: LightMyRequestResponse): Session {
  if (response.statusCode !== 200) throw new Error(`sign-in failed: ${response.statusCode} ${response.body}`)
  return { user, accessToken: response.json().accessToken, refreshToken: response.json().refreshToken, response }
}

t.test('a passkey-owning admin signed in with the password alone is refused /admin until a passkey is used', async (t) => {
  const server = await build(t, { variant, env })
  const admin = await adminSession(server, variant)
  const credential = await addPasskey(server, variant, admin)
  const victim = await loggedInUser(server, variant)

  // What a password thief has: a fresh password-only login of the admin.
  const thief = await logIn(server, variant, admin.user)
  const refused = await adminRequest(server, variant, thief, 'GET', '/admin/users')
  assertError(t, refused, 403, 'SECOND_FACTOR_REQUIRED')
  t.match(refused.json().message, /passkey/)
  assertError(t, await adminRequest(server, variant, thief, 'POST', `/admin/users/${victim.user.id}/disable`), 403, 'SECOND_FACTOR_REQUIRED')
  assertError(t, await adminRequest(server, variant, thief, 'POST', '/admin/users',
    { first_name: 'Eve', last_name: 'Admin', email: 'eve@example.com', role: 'admin', invite: false }), 403, 'SECOND_FACTOR_REQUIRED')
  t.equal((await server.inject({ method: 'GET', url: `/users/${victim.user.id}`, ...credentials(variant, victim) })).statusCode, 200, 'the user is still enabled')
  t.equal(await server.store.findUserByEmail('eve@example.com'), undefined, 'no admin was made')
  // Re-confirming the password is no second factor either.
  const reauth = await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, thief), payload: { password: admin.user.password } })
  t.equal(reauth.statusCode, 204)
  assertError(t, await adminRequest(server, variant, thief, 'GET', '/admin/users'), 403, 'SECOND_FACTOR_REQUIRED')

  // The owner signs in with the passkey: allowed.
  const passkeySession = sessionOf(admin.user, await server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: credential.assert(await passkeyOptions(server)) as object }))
  t.equal((await adminRequest(server, variant, passkeySession, 'GET', '/admin/users')).statusCode, 200, 'a passkey sign-in opens /admin')

  // Or steps the password session up with the passkey.
  const stepUp = await server.inject({ method: 'POST', url: '/auth/passkeys/reauthenticate', ...credentials(variant, thief), payload: credential.assert(await passkeyOptions(server)) as object })
  t.equal(stepUp.statusCode, 204, stepUp.body)
  t.equal((await adminRequest(server, variant, thief, 'GET', '/admin/users')).statusCode, 200, 'after a passkey step-up: 200')
  t.equal((await adminRequest(server, variant, thief, 'POST', `/admin/users/${victim.user.id}/disable`)).statusCode, 204)
})

t.test('a TOTP admin: password and code open /admin; the session that turned TOTP on does not', async (t) => {
  const server = await build(t, { variant, env })
  const admin = await adminSession(server, variant)
  const { secret, recoveryCodes } = await enableTotp(server, variant, admin)
  // Turning a factor on is no use of it: whoever holds a password session could turn on one of their own.
  assertError(t, await adminRequest(server, variant, admin, 'GET', '/admin/users'), 403, 'SECOND_FACTOR_REQUIRED')

  const withCode = sessionOf(admin.user, await verify(server, await mfaToken(server, admin.user), codeAt(secret, 1)))
  t.equal((await adminRequest(server, variant, withCode, 'GET', '/admin/users')).statusCode, 200, 'password + TOTP: 200')
  const withRecoveryCode = sessionOf(admin.user, await verify(server, await mfaToken(server, admin.user), recoveryCodes[0]))
  t.equal((await adminRequest(server, variant, withRecoveryCode, 'GET', '/admin/users')).statusCode, 200, 'a recovery code stands in for the code')

  // The enrolling session steps up with its password and a code (here a recovery code: the TOTP steps above are spent).
  const stepUp = await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, admin), payload: { password: admin.user.password, code: recoveryCodes[1] } })
  t.equal(stepUp.statusCode, 204, stepUp.body)
  t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users')).statusCode, 200, 'after the step-up: 200')
})

t.test('a password session of a passkey admin cannot add a second factor of its own to step up with', async (t) => {
  const server = await build(t, { variant, env })
  const admin = await adminSession(server, variant)
  const credential = await addPasskey(server, variant, admin)
  const thief = await logIn(server, variant, admin.user)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/mfa/totp', ...credentials(variant, thief) }), 403, 'SECOND_FACTOR_REQUIRED')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', ...credentials(variant, thief) }), 403, 'SECOND_FACTOR_REQUIRED')
  t.same((await server.store.listPasskeys(admin.user.id)).length, 1, 'no passkey added')

  // The owner, stepped up with its passkey, may.
  const stepUp = await server.inject({ method: 'POST', url: '/auth/passkeys/reauthenticate', ...credentials(variant, thief), payload: credential.assert(await passkeyOptions(server)) as object })
  t.equal(stepUp.statusCode, 204, stepUp.body)
  t.equal((await server.inject({ method: 'POST', url: '/auth/mfa/totp', ...credentials(variant, thief) })).statusCode, 200, 'TOTP setup begins')
})

t.test('without ADMIN_REQUIRE_MFA a password session still opens /admin', async (t) => {
  const server = await build(t, { variant, env: { ADMIN_REQUIRE_MFA: 'false' } })
  const admin = await adminSession(server, variant)
  t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users')).statusCode, 200)
})

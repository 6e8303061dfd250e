import t from 'tap'
import { build } from '../../fixtures/build.js'
import { testClock } from '../../fixtures/clock.js'
import { adminRequest, adminSession } from '../../fixtures/admin.js'
import { cookieValue, credentials, loggedInUser, logIn } from '../../fixtures/factories.js'
import { addPasskey, codeAt, enableTotp, mfaToken, verify } from '../../fixtures/mfa.js'
import { SoftwareCredential } from '../../fixtures/authenticator.js'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Variant } from '../../../core/config.js'

async function passkeyLogin (server: FastifyInstance, credential: SoftwareCredential) {
  const options = await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })
  return await server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: credential.assert(options.json()) as object })
}

/** The tokens a sign-in answered, as the variant carries them. */
function tokensOf (variant: Variant, response: LightMyRequestResponse) {
  if (response.statusCode !== 200) throw new Error(`sign-in failed: ${response.statusCode} ${response.body}`)
  return variant === 'header'
    ? { accessToken: response.json().accessToken as string, refreshToken: response.json().refreshToken as string }
    : { accessToken: cookieValue(response, 'accessToken'), refreshToken: cookieValue(response, 'refreshToken') }
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: who may use /admin`, async (t) => {
    const server = await build(t, { variant })
    const user = await loggedInUser(server, variant)
    const admin = await adminSession(server, variant)
    const anonymous = await adminRequest(server, variant, undefined, 'GET', '/admin/users')
    t.equal(anonymous.statusCode, 401, 'no session: 401')
    t.equal(anonymous.json().code, 'MISSING_TOKEN')

    for (const [method, url] of [['GET', '/admin/users'], ['GET', `/admin/users/${user.user.id}`], ['GET', '/admin/events'],
      ['POST', `/admin/users/${admin.user.id}/disable`], ['DELETE', `/admin/users/${admin.user.id}`]] as const) {
      const refused = await adminRequest(server, variant, user, method, url)
      t.equal(refused.statusCode, 403, `a non-admin: ${method} ${url} is 403`)
      t.equal(refused.json().code, 'FORBIDDEN')
      t.match(refused.json().message, /administrators/i)
    }
    const badInput = await adminRequest(server, variant, user, 'POST', '/admin/users', { nonsense: true })
    t.equal(badInput.statusCode, 403, 'a non-admin is refused before its input is judged')

    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users')).statusCode, 200, 'an admin: 200')
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users?limit=0')).statusCode, 400, 'bad input from an admin: 400')
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users?limit=0')).json().code, 'VALIDATION_FAILED')

    await server.store.setUserRole(admin.user.id, 'user', new Date())
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users')).statusCode, 403, 'the role is read at each request')
  })

  t.test(`${variant} variant: ADMIN_REQUIRE_MFA refuses an admin without a second factor`, async (t) => {
    const server = await build(t, { variant, env: { ADMIN_REQUIRE_MFA: 'true' } })
    const admin = await adminSession(server, variant)
    const refused = await adminRequest(server, variant, admin, 'GET', '/admin/users')
    t.equal(refused.statusCode, 403)
    t.equal(refused.json().code, 'MFA_ENROLLMENT_REQUIRED')
    const { secret } = await enableTotp(server, variant, admin)
    const turnedOn = await adminRequest(server, variant, admin, 'GET', '/admin/users')
    t.equal(turnedOn.json().code, 'SECOND_FACTOR_REQUIRED', 'turning TOTP on is not using it')
    const signIn = await verify(server, await mfaToken(server, admin.user), codeAt(secret, 1))
    const withCode = { ...admin, ...tokensOf(variant, signIn) }
    t.equal((await adminRequest(server, variant, withCode, 'GET', '/admin/users')).statusCode, 200, 'signed in with TOTP: 200')
  })

  t.test(`${variant} variant: a passkey is a second factor for ADMIN_REQUIRE_MFA; a disabled account's passkey login is refused`, async (t) => {
    const server = await build(t, { variant, env: { ADMIN_REQUIRE_MFA: 'true' } })
    const admin = await adminSession(server, variant)
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users')).statusCode, 403)
    const adminPasskey = await addPasskey(server, variant, admin)
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users')).json().code, 'SECOND_FACTOR_REQUIRED', 'a password session is not enough')
    const passkeySession = { ...admin, ...tokensOf(variant, await passkeyLogin(server, adminPasskey)) }
    t.equal((await adminRequest(server, variant, passkeySession, 'GET', '/admin/users')).statusCode, 200, 'signed in with a passkey: 200')

    const user = await loggedInUser(server, variant)
    const credential = await addPasskey(server, variant, user)
    t.equal((await passkeyLogin(server, credential)).statusCode, 200)
    t.equal((await adminRequest(server, variant, passkeySession, 'POST', `/admin/users/${user.user.id}/disable`)).statusCode, 204)
    const refused = await passkeyLogin(server, credential)
    t.equal(refused.statusCode, 403)
    t.equal(refused.json().code, 'ACCOUNT_DISABLED')
  })

  t.test(`${variant} variant: a change needs a fresh session; reading does not`, async (t) => {
    const clock = testClock()
    const server = await build(t, { variant, clock })
    const admin = await adminSession(server, variant)
    const user = await loggedInUser(server, variant)
    clock.advance(11 * 60_000) // past REAUTH_MAX_AGE (10m), within the access token's 15m
    t.equal((await adminRequest(server, variant, admin, 'GET', '/admin/users')).statusCode, 200)
    const stale = await adminRequest(server, variant, admin, 'POST', `/admin/users/${user.user.id}/disable`)
    t.equal(stale.statusCode, 403)
    t.equal(stale.json().code, 'REAUTHENTICATION_REQUIRED')
    const reauth = await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, admin), payload: { password: admin.user.password } })
    t.equal(reauth.statusCode, 204, reauth.body)
    t.equal((await adminRequest(server, variant, admin, 'POST', `/admin/users/${user.user.id}/disable`)).statusCode, 204, 'fresh again: done')
  })

  t.test(`${variant} variant: disabling stops a live access token at once; refresh and login answer ACCOUNT_DISABLED until enabled`, async (t) => {
    const server = await build(t, { variant })
    const admin = await adminSession(server, variant)
    const user = await loggedInUser(server, variant)
    const me = () => server.inject({ method: 'GET', url: `/users/${user.user.id}`, ...credentials(variant, user) })
    t.equal((await me()).statusCode, 200)

    t.equal((await adminRequest(server, variant, admin, 'POST', `/admin/users/${user.user.id}/disable`)).statusCode, 204)
    const stopped = await me()
    t.equal(stopped.statusCode, 401, 'the live access token is refused at once')
    t.equal(stopped.json().code, 'SESSION_REVOKED')
    const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, user) })
    t.equal(refresh.statusCode, 403)
    t.equal(refresh.json().code, 'ACCOUNT_DISABLED')
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.user.email, password: user.user.password } })
    t.equal(login.statusCode, 403)
    t.equal(login.json().code, 'ACCOUNT_DISABLED')
    const wrong = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.user.email, password: 'not the password at all' } })
    t.equal(wrong.json().code, 'INVALID_CREDENTIALS', 'a wrong password learns nothing of the account\'s state')
    t.match((await server.store.findUserById(user.user.id))?.disabledAt, Date)

    t.equal((await adminRequest(server, variant, admin, 'POST', `/admin/users/${user.user.id}/enable`)).statusCode, 204)
    const again = await logIn(server, variant, user.user)
    t.equal(again.response.statusCode, 200, 'enabled: login works again')
    t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, user) })).statusCode, 401, 'the sessions ended by disabling stay ended')
  })

  t.test(`${variant} variant: an account with TOTP is refused at the password step, and its pending second step is void`, async (t) => {
    const server = await build(t, { variant })
    const admin = await adminSession(server, variant)
    const user = await loggedInUser(server, variant)
    const { secret } = await enableTotp(server, variant, user)
    const first = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.user.email, password: user.user.password } })
    t.equal(first.json().code, 'MFA_REQUIRED')
    t.equal((await adminRequest(server, variant, admin, 'POST', `/admin/users/${user.user.id}/disable`)).statusCode, 204)
    const { codeAt } = await import('../../fixtures/mfa.js')
    const verify = await server.inject({ method: 'POST', url: '/auth/mfa/verify', payload: { mfa_token: first.json().mfa_token, code: codeAt(secret, 1) } })
    t.equal(verify.statusCode, 401, 'the pending second step was voided with the sessions')
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.user.email, password: user.user.password } })
    t.equal(login.json().code, 'ACCOUNT_DISABLED', 'no new second step for a disabled account')
  })
}

t.test('admin changes are limited per admin (RATE_LIMIT_ACCOUNT_MAX per window): 429 with Retry-After', async (t) => {
  const server = await build(t, { variant: 'header', env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_ACCOUNT_MAX: '2' } })
  const admin = await adminSession(server, 'header')
  const user = await loggedInUser(server, 'header')
  const disable = () => adminRequest(server, 'header', admin, 'POST', `/admin/users/${user.user.id}/disable`)
  t.equal((await disable()).statusCode, 204)
  t.equal((await disable()).statusCode, 204)
  const limited = await disable()
  t.equal(limited.statusCode, 429)
  t.equal(limited.json().code, 'RATE_LIMITED')
  t.ok(limited.headers['retry-after'])
  t.equal((await adminRequest(server, 'header', admin, 'GET', '/admin/users')).statusCode, 200, 'reading is not limited')
})

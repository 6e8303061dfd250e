import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { SoftwareCredential } from '../fixtures/authenticator.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser, type Session } from '../fixtures/factories.js'
import { sessionIdOf } from '../fixtures/mailbox.js'
import { addPasskey, codeAt, enableTotp } from '../fixtures/mfa.js'

/*
 * Issue 21, finding 12: re-authentication on a TOTP account took the password alone (a one-factor
 * step-up then unlocked turning TOTP off), and accounts without a password (provider-only,
 * passkey-only) could neither re-authenticate nor delete themselves.
 */

const variant = 'header'

/** The session's last proof moved past REAUTH_MAX_AGE (10 minutes by default). */
async function staleSession (server: FastifyInstance, session: Session): Promise<void> {
  await server.store.markSessionAuthenticated(sessionIdOf(session.accessToken), new Date(Date.now() - 11 * 60_000))
}

async function reauthenticate (server: FastifyInstance, session: Session, payload: Record<string, string>) {
  return await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload })
}

async function turnTotpOff (server: FastifyInstance, session: Session) {
  return await server.inject({ method: 'DELETE', url: '/auth/mfa/totp', ...credentials(variant, session) })
}

async function passkeyReauthentication (server: FastifyInstance, session: Session, credential: SoftwareCredential) {
  const options = (await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
  return await server.inject({ method: 'POST', url: '/auth/passkeys/reauthenticate', ...credentials(variant, session), payload: credential.assert(options) })
}

t.test('a TOTP account re-authenticates with its password and a current code, never with the password alone', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const { secret } = await enableTotp(server, variant, session)
  await staleSession(server, session)

  assertError(t, await reauthenticate(server, session, { password: session.user.password }), 403, 'MFA_REQUIRED')
  assertError(t, await turnTotpOff(server, session), 403, 'REAUTHENTICATION_REQUIRED')
  assertError(t, await reauthenticate(server, session, { password: session.user.password, code: codeAt(secret, 40) }), 401, 'INVALID_MFA_CODE')
  assertError(t, await reauthenticate(server, session, { password: 'not the password', code: codeAt(secret, 1) }), 401, 'INVALID_CREDENTIALS')
  assertError(t, await turnTotpOff(server, session), 403, 'REAUTHENTICATION_REQUIRED')

  t.equal((await reauthenticate(server, session, { password: session.user.password, code: codeAt(secret, 1) })).statusCode, 204)
  t.equal((await turnTotpOff(server, session)).statusCode, 204, 'both factors together make the session fresh')
  const events = await server.store.listSecurityEvents(session.user.id, { limit: 10 })
  t.match(events.find(event => event.type === 'reauthenticated')?.detail, { method: 'password+totp' })
  t.ok(events.some(event => event.type === 'mfa_failed'), 'the wrong code is recorded')
})

t.test('a recovery code stands in for the TOTP code at re-authentication, once', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const { recoveryCodes } = await enableTotp(server, variant, session)
  await staleSession(server, session)
  t.equal((await reauthenticate(server, session, { password: session.user.password, code: recoveryCodes[0] })).statusCode, 204)
  const events = await server.store.listSecurityEvents(session.user.id, { limit: 10 })
  t.match(events.find(event => event.type === 'reauthenticated')?.detail, { method: 'password+recovery_code' })
  await staleSession(server, session)
  assertError(t, await reauthenticate(server, session, { password: session.user.password, code: recoveryCodes[0] }), 401, 'INVALID_MFA_CODE')
})

t.test('a passkey re-authenticates a session of its owner, and no one else\'s', async (t) => {
  const server = await build(t, { variant })
  const owner = await loggedInUser(server, variant)
  const credential = await addPasskey(server, variant, owner)
  const stranger = await loggedInUser(server, variant)
  await staleSession(server, owner)
  await staleSession(server, stranger)

  assertError(t, await passkeyReauthentication(server, stranger, credential), 401, 'INVALID_PASSKEY')
  assertError(t, await turnTotpOff(server, stranger), 403, 'REAUTHENTICATION_REQUIRED')

  assertError(t, await turnTotpOff(server, owner), 403, 'REAUTHENTICATION_REQUIRED')
  t.equal((await passkeyReauthentication(server, owner, credential)).statusCode, 204)
  t.equal((await turnTotpOff(server, owner)).statusCode, 204, 'the passkey made the session fresh')
  const events = await server.store.listSecurityEvents(owner.user.id, { limit: 5 })
  t.match(events.find(event => event.type === 'reauthenticated')?.detail, { method: 'passkey' })
})

t.test('an account without a password (provider or passkey only) deletes itself from a fresh session, not from a stale one', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  // As a provider sign-in leaves it: no password at all.
  await server.store.setPasswordHash(session.user.id, null, new Date())
  const deletion = { method: 'DELETE' as const, url: `/users/${session.user.id}`, ...credentials(variant, session), payload: {} }

  await staleSession(server, session)
  assertError(t, await server.inject(deletion), 403, 'REAUTHENTICATION_REQUIRED')
  t.ok(await server.store.findUserById(session.user.id), 'still there')

  await server.store.markSessionAuthenticated(sessionIdOf(session.accessToken), new Date())
  t.equal((await server.inject(deletion)).statusCode, 204)
  t.equal(await server.store.findUserById(session.user.id), undefined, 'deleted')
})

t.test('an account with a password still confirms it to delete itself', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const deletion = { method: 'DELETE' as const, url: `/users/${session.user.id}`, ...credentials(variant, session) }
  assertError(t, await server.inject({ ...deletion, payload: {} }), 400, 'VALIDATION_FAILED')
  assertError(t, await server.inject({ ...deletion, payload: { password: 'not the password' } }), 401, 'INVALID_CREDENTIALS')
  t.ok(await server.store.findUserById(session.user.id), 'still there')
  t.equal((await server.inject({ ...deletion, payload: { password: session.user.password } })).statusCode, 204)
})

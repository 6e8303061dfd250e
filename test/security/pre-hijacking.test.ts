import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { SoftwareCredential } from '../fixtures/authenticator.js'
import { credentials, loggedInUser, logIn, type Session } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink, type Mailbox } from '../fixtures/mailbox.js'
import { codeAt, enableTotp, mfaToken, verify } from '../fixtures/mfa.js'
import { fragmentOf, providerSignIn, serviceWithProvider, type ProviderService } from '../fixtures/provider-service.js'

/*
 * Finding 1 of the second review: pre-hijacking through a squatter's second factor. A stranger
 * registers the owner's address with a password and adds a passkey or turns on TOTP, before the
 * owner ever proves the address. Proving it (a provider that verified it, a password reset, the
 * mailed verification link) must leave nothing of the squatter's set-up behind: the passkey no
 * longer signs in, the owner is never asked for the squatter's code. Runs on the backend under test.
 */

const ADDRESS = 'owner@example.test'

async function addPasskey (service: ProviderService, session: Session): Promise<SoftwareCredential> {
  const credential = new SoftwareCredential(service.baseUrl)
  const offered = await service.server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', ...credentials('cookie', session) })
  const created = await service.server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials('cookie', session), payload: credential.register(offered.json()) })
  if (created.statusCode !== 201) throw new Error(`passkey not added: ${created.statusCode} ${created.body}`)
  // The session steps up with it: a second factor added later (TOTP) needs a session that used one.
  const options = (await service.server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
  const stepUp = await service.server.inject({ method: 'POST', url: '/auth/passkeys/reauthenticate', ...credentials('cookie', session), payload: credential.assert(options) })
  if (stepUp.statusCode !== 204) throw new Error(`passkey step-up: ${stepUp.statusCode} ${stepUp.body}`)
  return credential
}

async function passkeyLogin (server: FastifyInstance, credential: SoftwareCredential) {
  const options = (await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
  return await server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: credential.assert(options) })
}

async function accountStatus (server: FastifyInstance, session: { accessToken: string, refreshToken: string }) {
  return (await server.inject({ method: 'GET', url: '/auth/account', ...credentials('cookie', session) })).statusCode
}

async function resetPassword (service: ProviderService, mailbox: Mailbox, newPassword: string) {
  await service.server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: ADDRESS } })
  const token = tokenFromLink(await mailbox.next(ADDRESS, 'Reset your password'), service.baseUrl, '/reset-password')
  return await service.server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: newPassword } })
}

t.test('a squatter\'s passkey no longer signs in once the owner signs in with a provider that verified the address', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const squatter = await loggedInUser(service.server, 'cookie', { email: ADDRESS })
  const passkey = await addPasskey(service, squatter)
  t.equal((await passkeyLogin(service.server, passkey)).statusCode, 200, 'before: the squatter\'s passkey signs in')

  service.provider.accounts.set('owner', { email: ADDRESS, email_verified: true })
  const { callback } = await providerSignIn(service, 'owner')
  t.equal(callback.status, 200, 'the owner is signed in')

  const attempt = await passkeyLogin(service.server, passkey)
  t.equal(attempt.statusCode, 401, 'the squatter\'s passkey no longer signs in')
  t.equal(attempt.json().code, 'INVALID_PASSKEY')
  t.same(await service.server.store.listPasskeys(squatter.user.id), [], 'the account has no passkey left')
  t.equal((await service.server.inject({ method: 'POST', url: '/auth/login', payload: { email: ADDRESS, password: squatter.user.password } })).statusCode, 401, 'nor the squatter\'s password')
  t.equal(await accountStatus(service.server, squatter), 401, 'the squatter\'s session has ended')
})

t.test('the owner\'s provider sign-in is not asked for a squatter\'s TOTP code, and the squatter\'s pending mfa_token is void', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const squatter = await loggedInUser(service.server, 'cookie', { email: ADDRESS })
  const { secret, recoveryCodes } = await enableTotp(service.server, 'cookie', squatter)
  const pending = await mfaToken(service.server, squatter.user)

  const { callback } = await providerSignIn(service, 'owner')
  t.equal(callback.status, 200, 'signed in at once')
  t.notOk(fragmentOf(callback).has('mfa_token'), 'no second step asked for')
  t.ok(callback.headers.getSetCookie().some(line => line.startsWith('accessToken=')), 'the session cookies are set')

  t.equal((await verify(service.server, pending, codeAt(secret, 1))).statusCode, 401, 'the squatter\'s pending second step no longer completes')
  t.equal(await service.server.store.findTotp(squatter.user.id), undefined, 'no TOTP secret is left')
  t.equal(await service.server.store.countRecoveryCodes(squatter.user.id), 0, 'nor a recovery code')
  t.ok(recoveryCodes.length > 0)
})

t.test('a squatter\'s passkey and TOTP are gone after the owner resets the password of the never-verified account', async (t) => {
  const mailbox = await startMailbox(t)
  const service = await serviceWithProvider(t, 'cookie', { SMTP_URL: mailbox.smtpUrl })
  const squatter = await loggedInUser(service.server, 'cookie', { email: ADDRESS })
  const passkey = await addPasskey(service, squatter)
  await enableTotp(service.server, 'cookie', squatter)

  t.equal((await resetPassword(service, mailbox, 'the owner\'s own password')).statusCode, 204)

  t.equal((await passkeyLogin(service.server, passkey)).statusCode, 401, 'the squatter\'s passkey no longer signs in')
  const login = await service.server.inject({ method: 'POST', url: '/auth/login', payload: { email: ADDRESS, password: 'the owner\'s own password' } })
  t.equal(login.statusCode, 200, 'the owner signs in with the new password, without the squatter\'s code')
  t.equal((await service.server.store.findUserByEmail(ADDRESS))?.emailVerified, true, 'the reset proved the address')
  t.equal(await accountStatus(service.server, squatter), 401, 'the squatter\'s session has ended')
})

t.test('following the mailed verification link strips a squatter\'s passkey and TOTP and ends its sessions', async (t) => {
  const mailbox = await startMailbox(t)
  const service = await serviceWithProvider(t, 'cookie', { SMTP_URL: mailbox.smtpUrl })
  const squatter = await loggedInUser(service.server, 'cookie', { email: ADDRESS })
  const link = tokenFromLink(await mailbox.next(ADDRESS, 'Verify your email address'), service.baseUrl, '/verify-email')
  const passkey = await addPasskey(service, squatter)
  const { secret } = await enableTotp(service.server, 'cookie', squatter)
  const pending = await mfaToken(service.server, squatter.user)

  const verified = await service.server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: link } })
  t.equal(verified.statusCode, 204)

  t.equal((await passkeyLogin(service.server, passkey)).statusCode, 401, 'the squatter\'s passkey no longer signs in')
  t.equal(await service.server.store.findTotp(squatter.user.id), undefined, 'no TOTP secret is left')
  t.equal((await verify(service.server, pending, codeAt(secret, 1))).statusCode, 401, 'the pending second step no longer completes')
  t.equal(await accountStatus(service.server, squatter), 401, 'the session that set them up has ended')
})

t.test('a password reset of a verified account keeps its passkey and TOTP: a reset never turns a second factor off', async (t) => {
  const mailbox = await startMailbox(t)
  const service = await serviceWithProvider(t, 'cookie', { SMTP_URL: mailbox.smtpUrl })
  const owner = await loggedInUser(service.server, 'cookie', { email: ADDRESS })
  const link = tokenFromLink(await mailbox.next(ADDRESS, 'Verify your email address'), service.baseUrl, '/verify-email')
  t.equal((await service.server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: link } })).statusCode, 204)
  const session = await logIn(service.server, 'cookie', owner.user)
  const passkey = await addPasskey(service, session)
  await enableTotp(service.server, 'cookie', session)

  t.equal((await resetPassword(service, mailbox, 'a new password of mine')).statusCode, 204)

  t.equal((await passkeyLogin(service.server, passkey)).statusCode, 200, 'the passkey still signs in')
  const login = await service.server.inject({ method: 'POST', url: '/auth/login', payload: { email: ADDRESS, password: 'a new password of mine' } })
  t.equal(login.statusCode, 403, 'the new password still asks for the second factor')
  t.equal(login.json().code, 'MFA_REQUIRED')
})

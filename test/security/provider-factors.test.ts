import t, { type Test } from 'tap'
import { registerUser, markEmailVerified } from '../fixtures/factories.js'
import { startMailbox, type Mailbox } from '../fixtures/mailbox.js'
import { codeAt, enableTotp } from '../fixtures/mfa.js'
import { fragmentOf, providerSignIn, serviceWithProvider, type ProviderService } from '../fixtures/provider-service.js'

/*
 * Issue 21, finding 12, with a real OpenID provider: linking a provider sent the owner no mail; a
 * provider sign-in completed with TOTP was recorded as `password+totp`; and an account made by a
 * provider (no password) could not delete itself.
 */

type Service = ProviderService & { mailbox: Mailbox }

async function serviceWithMailbox (t: Test): Promise<Service> {
  const mailbox = await startMailbox(t)
  return { ...await serviceWithProvider(t, 'header', { SMTP_URL: mailbox.smtpUrl }), mailbox }
}

/** A provider sign-in as `login` through to the exchange of its one-time code (header variant). */
async function signIn (service: Service, login: string) {
  const { callback, verifier } = await providerSignIn(service, login)
  const code = fragmentOf(callback).get('code') ?? ''
  return await service.server.inject({ method: 'POST', url: '/auth/oidc/exchange', payload: { code, code_verifier: verifier } })
}

t.test('the owner is mailed when a provider sign-in links a provider to the account', async (t) => {
  const service = await serviceWithMailbox(t)
  const owner = await registerUser(service.server, 'header', { email: 'linked@example.test' })
  await markEmailVerified(service.server.store, owner.id)
  const login = await signIn(service, 'linked')
  t.equal(login.statusCode, 200)
  t.equal(login.json().user.id, owner.id, 'linked to the account with that address')
  const mail = await service.mailbox.next(owner.email, 'A sign-in provider was linked to your account')
  t.match(mail.text, /"test"/, 'it names the provider')
})

t.test('a provider sign-in completed with a TOTP code is recorded as oidc+totp, with the provider', async (t) => {
  const service = await serviceWithMailbox(t)
  const first = (await signIn(service, 'twofactor')).json()
  const session = { accessToken: first.accessToken, refreshToken: first.refreshToken }
  const { secret } = await enableTotp(service.server, 'header', { ...session, user: first.user, response: undefined as never })

  const refused = await signIn(service, 'twofactor')
  t.equal(refused.json().code, 'MFA_REQUIRED')
  const verified = await service.server.inject({ method: 'POST', url: '/auth/mfa/verify', payload: { mfa_token: refused.json().mfa_token, code: codeAt(secret, 1) } })
  t.equal(verified.statusCode, 200)

  const events = await service.server.store.listSecurityEvents(first.user.id, { limit: 10 })
  const login = events.find(event => event.type === 'login')
  t.match(login?.detail, { method: 'oidc+totp', provider: 'test' })
  t.notOk(events.some(event => event.type === 'login' && event.detail?.method === 'password+totp'), 'never as a password')
})

t.test('an account made by a provider sign-in deletes itself from the fresh session of that sign-in', async (t) => {
  const service = await serviceWithMailbox(t)
  const login = (await signIn(service, 'leaving')).json()
  t.equal((await service.server.store.findUserById(login.user.id))?.passwordHash, null, 'no password to confirm')
  const deleted = await service.server.inject({
    method: 'DELETE', url: `/users/${login.user.id}`, headers: { authorization: `Bearer ${login.accessToken}` }, payload: {}
  })
  t.equal(deleted.statusCode, 204, deleted.body)
  t.equal(await service.server.store.findUserById(login.user.id), undefined)
})

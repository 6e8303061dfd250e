import t from 'tap'
import { credentials, loggedInUser, registerUser } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'
import { fragmentOf, providerSignIn, serviceWithProvider } from '../fixtures/provider-service.js'

/*
 * Finding 2 of the second review: an account made from a provider email the provider did not
 * verify kept the attacker's identity after the owner proved the address. An unverified provider
 * email now makes no account and links nothing; an identity linked before this fix goes with the
 * first proof of the address; and a sign-in refused for identity_conflict changes nothing.
 * Runs on the backend under test.
 */

const ADDRESS = 'victim@example.test'
const sessionCookieSet = (response: Response) => response.headers.getSetCookie().some(line => /^(accessToken|refreshToken)=./.test(line))

t.test('a provider email the provider did not verify makes no account and links nothing: the browser comes back with #error=email_not_verified', async (t) => {
  for (const variant of ['cookie', 'header'] as const) {
    const service = await serviceWithProvider(t, variant)
    service.provider.accounts.set('mallory', { email: ADDRESS, email_verified: false })
    const { callback } = await providerSignIn(service, 'mallory')
    t.equal(callback.status, 303, variant)
    t.equal(fragmentOf(callback).get('error'), 'email_not_verified', `${variant}: refused with its reason`)
    t.notOk(fragmentOf(callback).has('code'), `${variant}: no login code`)
    t.notOk(sessionCookieSet(callback), `${variant}: no session`)
    t.equal(await service.server.store.findUserByEmail(ADDRESS), undefined, `${variant}: no account`)
    t.equal(await service.server.store.findIdentity('test', 'mallory'), undefined, `${variant}: no identity`)
    if (variant === 'cookie') {
      const script = (await service.server.inject({ method: 'GET', url: '/assets/account-providers.js' })).body
      t.match(script, /email_not_verified: 'The provider has not confirmed that this email address is yours/, 'the console says why in a sentence')
    }
  }
})

t.test('an unverified provider email never reaches an existing account either, and the refusal does not say whether one exists', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  service.provider.accounts.set('mallory', { email: ADDRESS, email_verified: false })
  const none = await providerSignIn(service, 'mallory')
  const holder = await registerUser(service.server, 'cookie', { email: ADDRESS })
  const some = await providerSignIn(service, 'mallory')
  t.equal(some.callback.headers.get('location'), none.callback.headers.get('location'), 'the same answer with an account as without')
  t.same(await service.server.store.listIdentities(holder.id), [], 'nothing linked')
})

t.test('an identity linked from an unverified provider email (before this fix) no longer signs in once the owner resets the password', async (t) => {
  const mailbox = await startMailbox(t)
  const service = await serviceWithProvider(t, 'cookie', { SMTP_URL: mailbox.smtpUrl })
  // What the callback used to do for `email_verified: false`: an account without a password, holding mallory's identity.
  const squatted = await service.server.store.createUserWithIdentity({ firstName: 'M', lastName: 'M', username: 'mallory', email: ADDRESS, passwordHash: null },
    { provider: 'test', subject: 'mallory', email: ADDRESS }, new Date())
  service.provider.accounts.set('mallory', { email: ADDRESS, email_verified: false })
  t.ok(sessionCookieSet((await providerSignIn(service, 'mallory')).callback), 'before: mallory signs in through the identity')

  await service.server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: ADDRESS } })
  const token = tokenFromLink(await mailbox.next(ADDRESS, 'Reset your password'), service.baseUrl, '/reset-password')
  t.equal((await service.server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: 'the owner\'s own password' } })).statusCode, 204)

  t.same(await service.server.store.listIdentities(squatted.id), [], 'the unproven identity is gone')
  const { callback } = await providerSignIn(service, 'mallory')
  t.notOk(sessionCookieSet(callback), 'mallory no longer signs in')
  t.equal(fragmentOf(callback).get('error'), 'email_not_verified')
})

t.test('a sign-in refused for identity_conflict changes nothing: the password, the sessions and the verification state stay', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const holder = await loggedInUser(service.server, 'cookie', { email: ADDRESS })
  // The account already has another account of the same provider linked.
  t.ok(await service.server.store.linkIdentity({ provider: 'test', subject: 'someone-else', userId: holder.user.id, email: null }, new Date()))
  service.provider.accounts.set('victim', { email: ADDRESS, email_verified: true })

  const { callback } = await providerSignIn(service, 'victim')
  t.equal(fragmentOf(callback).get('error'), 'identity_conflict')
  t.notOk(sessionCookieSet(callback), 'not signed in')

  const stored = await service.server.store.findUserById(holder.user.id)
  t.equal(stored?.emailVerified, false, 'the address is not marked verified')
  t.not(stored?.passwordHash, null, 'the password is kept')
  t.equal((await service.server.inject({ method: 'POST', url: '/auth/login', payload: { email: ADDRESS, password: holder.user.password } })).statusCode, 200, 'and still signs in')
  t.equal((await service.server.inject({ method: 'GET', url: '/auth/account', ...credentials('cookie', holder) })).statusCode, 200, 'the session is still live')
  t.equal(await service.server.store.findIdentity('test', 'victim'), undefined, 'nothing linked')
})

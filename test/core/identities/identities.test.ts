import t, { type Test } from 'tap'
import { currentDate } from '../../../core/clock.js'
import { createIdentities, LOGIN_CODE_TTL_SECONDS, SignInRefusedError } from '../../../core/identities/identities.js'
import { s256 } from '../../../core/oidc/login-code.js'
import type { ProviderClaims } from '../../../core/oidc/providers.js'
import { CLIENT, standIns } from '../accounts/fakes.js'

const VERIFIER = 'the code verifier of the test app, at least 43 characters long'

/** The identity rules on a fresh store; the account's proveAddress goes straight to the store's. */
async function identitiesFor (t: Test) {
  const { store, clock, mailer, sessions, securityEvents, webhooks } = await standIns(t)
  const identities = createIdentities({
    store,
    clock,
    sessions,
    securityEvents,
    account: { proveAddress: (proof) => store.proveAddress(proof, currentDate(clock)) },
    mailer,
    webhooks
  })
  return { identities, store, clock, mailer, sessions, securityEvents, webhooks }
}

const claimsOf = (subject: string, claims: Partial<ProviderClaims> = {}): ProviderClaims =>
  ({ subject, email: `${subject}@example.test`, emailVerified: true, givenName: 'Grace', familyName: 'Hopper', ...claims })

async function refusal (promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
  } catch (error) {
    if (error instanceof SignInRefusedError) return error.reason
    throw error
  }
  return undefined
}

t.test('a verified provider email of nobody makes a verified account without a password, linked to the identity', async (t) => {
  const { identities, store, webhooks } = await identitiesFor(t)
  const user = await identities.accountFor('test', claimsOf('grace', { preferredUsername: 'amazing.grace' }), 'cookie', CLIENT)
  t.same(webhooks.emitted, [{ type: 'user.created', userId: user.id, email: 'grace@example.test' }], 'a user.created webhook')
  t.match(user, { email: 'grace@example.test', passwordHash: null, emailVerified: true, firstName: 'Grace', lastName: 'Hopper', username: 'amazing.grace' })
  t.match(await store.listIdentities(user.id), [{ provider: 'test', subject: 'grace' }])
  const again = await identities.accountFor('test', claimsOf('grace', { email: 'new-address@example.test' }), 'cookie', CLIENT)
  t.equal(again.id, user.id, 'the next sign-in finds the account by its identity, whatever the email now')
  t.equal(webhooks.emitted.length, 1, 'and makes no other account')
})

t.test('an email the provider did not verify, or none, neither makes an account nor opens one', async (t) => {
  const { identities, store } = await identitiesFor(t)
  t.equal(await refusal(identities.accountFor('test', claimsOf('grace', { emailVerified: false }), 'header', CLIENT)), 'email_not_verified')
  t.equal(await store.findUserByEmail('grace@example.test'), undefined)
  const ada = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'hash' })
  t.equal(await refusal(identities.accountFor('test', claimsOf('x', { email: ada.email, emailVerified: false }), 'header', CLIENT)), 'email_not_verified', 'the same refusal for an address that has an account')
  t.equal(await refusal(identities.accountFor('test', claimsOf('x', { email: undefined }), 'header', CLIENT)), 'email_required')
})

t.test('a verified email of an account links it and tells the owner; one never verified is claimed first', async (t) => {
  const { identities, store, mailer, securityEvents } = await identitiesFor(t)
  const ada = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'hash of a registrant' })
  const user = await identities.accountFor('test', claimsOf('ada', { email: ada.email }), 'header', CLIENT)
  t.equal(user.id, ada.id)
  t.equal(user.passwordHash, null, 'the registrant\'s password is gone (pre-hijacking)')
  t.equal(user.emailVerified, true)
  t.match(securityEvents.events, [{ type: 'identity_linked', userId: ada.id, detail: { provider: 'test', password_cleared: true } }])
  t.match(mailer.enqueued, [{ to: ada.email }], 'the owner is told of the new way in')
})

t.test('an account with another identity at that provider is refused: identity_conflict', async (t) => {
  const { identities } = await identitiesFor(t)
  await identities.accountFor('test', claimsOf('grace'), 'header', CLIENT)
  t.equal(await refusal(identities.accountFor('test', claimsOf('another-grace', { email: 'grace@example.test' }), 'header', CLIENT)), 'identity_conflict')
})

t.test('a login code is redeemed once, with its verifier, within LOGIN_CODE_TTL', async (t) => {
  const { identities, clock } = await identitiesFor(t)
  const user = await identities.accountFor('test', claimsOf('grace'), 'header', CLIENT)
  const code = await identities.issueLoginCode(user, 'test', s256(VERIFIER))
  const redeemed = await identities.redeemLoginCode(code, VERIFIER)
  t.equal(redeemed.user.id, user.id)
  t.equal(redeemed.provider, 'test')
  await t.rejects(identities.redeemLoginCode(code, VERIFIER), { code: 'INVALID_CODE' }, 'once')

  const stolen = await identities.issueLoginCode(user, 'test', s256(VERIFIER))
  await t.rejects(identities.redeemLoginCode(stolen, 'another app\'s verifier, at least forty-three characters'), { code: 'INVALID_CODE' })
  await t.rejects(identities.redeemLoginCode(stolen, VERIFIER), { code: 'INVALID_CODE' }, 'a wrong verifier spends the code')

  const late = await identities.issueLoginCode(user, 'test', s256(VERIFIER))
  clock.advance(LOGIN_CODE_TTL_SECONDS * 1000)
  await t.rejects(identities.redeemLoginCode(late, VERIFIER), { code: 'INVALID_CODE' }, 'expired')
})

t.test('unlinking needs a fresh session, and never removes the last way in', async (t) => {
  const { identities, store, sessions, securityEvents } = await identitiesFor(t)
  const user = await identities.accountFor('test', claimsOf('grace'), 'header', CLIENT)
  const actor = { user, sessionId: 'session-1', client: CLIENT }
  await t.rejects(identities.unlink(actor, 'elsewhere'), { code: 'IDENTITY_NOT_FOUND' })
  await t.rejects(identities.unlink(actor, 'test'), { code: 'LAST_LOGIN_METHOD' })
  await store.setPasswordHash(user.id, 'a password hash', new Date())
  sessions.stale.add('session-1')
  await t.rejects(identities.unlink(actor, 'test'), { code: 'REAUTHENTICATION_REQUIRED' })
  sessions.stale.clear()
  await identities.unlink(actor, 'test')
  t.same(await identities.list(user.id), [])
  t.match(securityEvents.events.at(-1), { type: 'identity_unlinked', userId: user.id, detail: { provider: 'test' } })
})

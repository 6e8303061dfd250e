import t from 'tap'
import { IdentityTakenError } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

const newUser = (email: string, passwordHash: string | null) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash })

t.test('an identity belongs to one user; a user has one per provider; a user made with one has no password', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  const ada = await store.createUserWithIdentity(newUser('a@example.com', null), { provider: 'google', subject: 'g-1', email: 'a@example.com' }, now)
  t.equal(ada.passwordHash, null)
  t.match(await store.findIdentity('google', 'g-1'), { provider: 'google', subject: 'g-1', userId: ada.id, email: 'a@example.com', createdAt: Date })
  t.equal(await store.findIdentity('google', 'g-2'), undefined)
  t.equal(await store.findIdentity('corp', 'g-1'), undefined, 'a subject is only unique within its provider')

  const bob = await store.createUser(newUser('b@example.com', 'hash'))
  t.equal(await store.linkIdentity({ provider: 'google', subject: 'g-1', userId: bob.id, email: null }, now), false, 'another user\'s identity is not linked')
  t.equal(await store.linkIdentity({ provider: 'google', subject: 'g-9', userId: ada.id, email: null }, now), false, 'a second identity at the same provider is not linked')
  t.equal(await store.linkIdentity({ provider: 'corp', subject: 'c-1', userId: ada.id, email: null }, now), true)
  t.same((await store.listIdentities(ada.id)).map(identity => identity.provider).sort(), ['corp', 'google'])

  await t.rejects(store.createUserWithIdentity(newUser('c@example.com', null), { provider: 'google', subject: 'g-1', email: null }, now), IdentityTakenError)
  t.equal(await store.findUserByEmail('c@example.com'), undefined, 'the user is not made without its identity')

  t.ok(await store.deleteUser(ada.id))
  t.equal(await store.findIdentity('google', 'g-1'), undefined, 'identities go with their user')
})

t.test('unlinking never removes the last way to sign in, even when two unlinks race', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  const ada = await store.createUserWithIdentity(newUser('a@example.com', null), { provider: 'google', subject: 'g-1', email: null }, now)
  await store.linkIdentity({ provider: 'corp', subject: 'c-1', userId: ada.id, email: null }, now)
  const outcomes = await Promise.all([store.unlinkIdentity(ada.id, 'google'), store.unlinkIdentity(ada.id, 'corp')])
  t.same(outcomes.sort(), ['last_login_method', 'unlinked'])
  t.equal((await store.listIdentities(ada.id)).length, 1, 'one way in is left')
  t.equal(await store.unlinkIdentity(ada.id, 'nowhere'), 'not_found')

  await store.setPasswordHash(ada.id, 'hash', now)
  const [left] = await store.listIdentities(ada.id)
  t.equal(await store.unlinkIdentity(ada.id, left.provider), 'unlinked', 'with a password, the last identity may go')
})

t.test('a passkey is a way to sign in: the last identity of an account with a passkey and no password may go', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  const ada = await store.createUserWithIdentity(newUser('a@example.com', null), { provider: 'google', subject: 'g-1', email: null }, now)
  t.equal(await store.unlinkIdentity(ada.id, 'google'), 'last_login_method', 'no password, no passkey: it stays')
  t.ok(await store.createPasskey({ id: 'passkey-1', userId: ada.id, credentialId: 'credential-1', publicKey: 'key', counter: 0, transports: [], name: 'Phone' }, now))
  t.equal(await store.unlinkIdentity(ada.id, 'google'), 'unlinked', 'the passkey is left to sign in with')
})

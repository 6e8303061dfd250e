import t from 'tap'
import type { NewPasskey } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

/* The passkey and WebAuthn-challenge methods of the store, on the backend under test (TEST_STORE). */

const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })
const at = (offsetMs: number) => new Date(Date.now() + offsetMs)
const passkey = (userId: number, id: string, credentialId: string): NewPasskey => ({
  id, userId, credentialId, publicKey: 'cHVibGlj', counter: 0, transports: ['internal', 'hybrid'], name: 'Laptop'
})
const ID_A = '00000000-0000-4000-8000-00000000000a'
const ID_B = '00000000-0000-4000-8000-00000000000b'

t.test('passkeys are stored per user, found by credential id, renamed and deleted only by their owner', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  t.equal(await store.createPasskey(passkey(ada.id, ID_A, 'cred-a'), at(0)), true)
  t.equal(await store.createPasskey(passkey(bob.id, ID_B, 'cred-a'), at(1)), false, 'a credential id is stored once, for anyone')
  t.equal(await store.createPasskey({ ...passkey(ada.id, ID_B, 'cred-b'), transports: [] }, at(2)), true)

  t.same((await store.listPasskeys(ada.id)).map(entry => entry.id), [ID_A, ID_B], 'oldest first')
  t.same(await store.listPasskeys(bob.id), [])
  t.match(await store.findPasskeyByCredentialId('cred-a'), { id: ID_A, userId: ada.id, counter: 0, transports: ['internal', 'hybrid'], name: 'Laptop', createdAt: Date, lastUsedAt: null })
  t.same((await store.findPasskeyByCredentialId('cred-b'))?.transports, [])
  t.equal(await store.findPasskeyByCredentialId('cred-x'), undefined)

  t.equal(await store.renamePasskey(bob.id, ID_A, 'stolen'), undefined, 'not by another user')
  t.match(await store.renamePasskey(ada.id, ID_A, 'Phone'), { id: ID_A, name: 'Phone' })
  t.equal(await store.deletePasskey(bob.id, ID_A), false, 'not by another user')
  t.equal(await store.deletePasskey(ada.id, ID_A), true)
  t.equal(await store.deletePasskey(ada.id, ID_A), false)
  t.equal(await store.deleteUser(ada.id), true)
  t.equal(await store.findPasskeyByCredentialId('cred-b'), undefined, 'a deleted user\'s passkeys go with it')
})

t.test('a passkey\'s counter only grows; 0 after 0 is an authenticator without a counter', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  await store.createPasskey(passkey(ada.id, ID_A, 'cred-a'), at(0))
  t.equal(await store.recordPasskeyUse(ID_A, 0, at(1)), true, '0 after 0')
  t.match(await store.findPasskeyByCredentialId('cred-a'), { counter: 0, lastUsedAt: Date })
  t.equal(await store.recordPasskeyUse(ID_A, 5, at(2)), true)
  t.equal(await store.recordPasskeyUse(ID_A, 5, at(3)), false, 'the same counter again')
  t.equal(await store.recordPasskeyUse(ID_A, 4, at(3)), false, 'a lower counter')
  t.equal(await store.recordPasskeyUse(ID_A, 0, at(3)), false, '0 after a counter')
  t.equal(await store.recordPasskeyUse(ID_A, 4_294_967_295, at(4)), true, 'the largest uint32')
  t.equal((await store.findPasskeyByCredentialId('cred-a'))?.counter, 4_294_967_295)
  t.equal(await store.recordPasskeyUse(ID_B, 9, at(5)), false, 'an unknown passkey')
})

t.test('a WebAuthn challenge is consumed once, only for its purpose and user, and not after it expired', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  await store.createWebauthnChallenge({ challengeHash: 'reg', purpose: 'registration', userId: ada.id, expiresAt: at(60_000) }, at(0))
  await store.createWebauthnChallenge({ challengeHash: 'auth', purpose: 'authentication', userId: null, expiresAt: at(60_000) }, at(0))
  await store.createWebauthnChallenge({ challengeHash: 'old', purpose: 'authentication', userId: null, expiresAt: at(1000) }, at(0))

  t.equal(await store.consumeWebauthnChallenge('reg', 'authentication', at(0)), false, 'not for another purpose')
  t.equal(await store.consumeWebauthnChallenge('reg', 'registration', at(0), bob.id), false, 'not for another user')
  t.equal(await store.consumeWebauthnChallenge('reg', 'registration', at(0), ada.id), true)
  t.equal(await store.consumeWebauthnChallenge('reg', 'registration', at(0), ada.id), false, 'once')
  t.equal(await store.consumeWebauthnChallenge('old', 'authentication', at(2000)), false, 'expired')
  t.equal(await store.consumeWebauthnChallenge('old', 'authentication', at(0)), false, 'and used up by that try')
  const racing = await Promise.all([1, 2, 3].map(() => store.consumeWebauthnChallenge('auth', 'authentication', at(0))))
  t.same(racing.filter(Boolean), [true], 'of racing consumers, one wins')

  await store.createWebauthnChallenge({ challengeHash: 'stale', purpose: 'authentication', userId: null, expiresAt: at(1000) }, at(0))
  await store.createWebauthnChallenge({ challengeHash: 'fresh', purpose: 'authentication', userId: null, expiresAt: at(70_000) }, at(2000))
  t.equal(await store.consumeWebauthnChallenge('stale', 'authentication', at(0)), false, 'expired challenges are deleted when a new one is stored')
  t.equal(await store.consumeWebauthnChallenge('fresh', 'authentication', at(2000)), true)
})

import t, { type Test } from 'tap'
import { createWebauthnChallenges, PASSKEY_CHALLENGE_TTL_MS } from '../../../core/passkeys/challenges.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

/* The one-time challenges of the WebAuthn ceremonies (core/passkeys/challenges.ts), on a fresh store with a test clock. */

/** The clientDataJSON a browser sends back for a challenge (base64url of its JSON). */
function clientDataFor (challenge: Uint8Array | string): string {
  const text = typeof challenge === 'string' ? challenge : Buffer.from(challenge).toString('base64url')
  return Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: text, origin: 'http://localhost:3000' })).toString('base64url')
}

async function fixture (t: Test) {
  const store = await testStore(t)
  const clock = testClock()
  const ada = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: null })
  const bob = await store.createUser({ firstName: 'Bob', lastName: 'Byron', username: null, email: 'bob@example.com', passwordHash: null })
  return { clock, ada, bob, challenges: createWebauthnChallenges({ store, clock }) }
}

t.test('a challenge is 256 random bits, good for one answer', async (t) => {
  const { challenges } = await fixture(t)
  const challenge = await challenges.issue('authentication', null)
  t.equal(challenge.length, 32)
  t.not(Buffer.from(await challenges.issue('authentication', null)).toString('hex'), Buffer.from(challenge).toString('hex'), 'a new one each time')
  const expected = Buffer.from(challenge).toString('base64url')
  t.equal(await challenges.consume(clientDataFor(challenge), 'authentication'), expected, 'the answer gives back the challenge it signed')
  t.equal(await challenges.consume(clientDataFor(challenge), 'authentication'), undefined, 'used up')
})

t.test('a challenge lasts PASSKEY_CHALLENGE_TTL_MS', async (t) => {
  const { clock, challenges } = await fixture(t)
  const lasting = await challenges.issue('authentication', null)
  const expiring = await challenges.issue('authentication', null)
  clock.advance(PASSKEY_CHALLENGE_TTL_MS - 1000)
  t.ok(await challenges.consume(clientDataFor(lasting), 'authentication'), 'still good just before')
  clock.advance(1000)
  t.equal(await challenges.consume(clientDataFor(expiring), 'authentication'), undefined, 'expired')
})

t.test('a registration challenge is good only for the user who asked for it, and only for a registration', async (t) => {
  const { ada, bob, challenges } = await fixture(t)
  const challenge = await challenges.issue('registration', ada.id)
  t.equal(await challenges.consume(clientDataFor(challenge), 'authentication'), undefined, 'not for a login')
  t.equal(await challenges.consume(clientDataFor(challenge), 'registration', bob.id), undefined, 'not for another user')
  t.ok(await challenges.consume(clientDataFor(challenge), 'registration', ada.id))
})

t.test('an answer with no readable challenge is refused and uses up nothing', async (t) => {
  const { challenges } = await fixture(t)
  const challenge = await challenges.issue('authentication', null)
  for (const clientDataJSON of ['not json', Buffer.from('null').toString('base64url'), Buffer.from('{"challenge":""}').toString('base64url'),
    Buffer.from('{"challenge":42}').toString('base64url'), clientDataFor('never-issued')]) {
    t.equal(await challenges.consume(clientDataJSON, 'authentication'), undefined, clientDataJSON)
  }
  t.ok(await challenges.consume(clientDataFor(challenge), 'authentication'), 'the real challenge is still there')
})

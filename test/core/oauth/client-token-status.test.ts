import t, { type Test } from 'tap'
import { CLIENT_TOKEN_STATUS_KIND, createClientTokenStatus } from '../../../core/oauth/client-token-status.js'
import { storeWith } from '../../../core/revocations/following-store.js'
import type { OAuthModelClaim } from '../../../db/store.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

// The status entries of client-credentials tokens (core/oauth/client-token-status.ts): the tokens issued in one
// turn of the event loop claim their indexes in one store transaction; an index already held is drawn again.

/** The store, with each claimOAuthModels call's claims recorded, and `before` run ahead of it (a rival instance's claims). */
async function recordedStore (t: Test, before: (claims: OAuthModelClaim[]) => Promise<void> = async () => {}) {
  const store = await testStore(t)
  const batches: OAuthModelClaim[][] = []
  const recorded = storeWith(store, {
    async claimOAuthModels (kind, claims, now) {
      batches.push(claims)
      await before(claims)
      return await store.claimOAuthModels(kind, claims, now)
    }
  })
  return { store, recorded, batches }
}

const expiresAt = () => new Date(Date.now() + 900_000)

t.test('tokens issued in one turn claim their indexes in one transaction, each its own', async (t) => {
  const { store, recorded, batches } = await recordedStore(t)
  const clientTokens = createClientTokenStatus({ store: recorded, clock: testClock() })
  const indexes = await Promise.all(Array.from({ length: 20 }, (_, at) => clientTokens.issue({ clientId: 'machine', jti: `jti-${at}`, expiresAt: expiresAt() })))
  t.equal(batches.length, 1, 'one claimOAuthModels call')
  t.equal(batches[0].length, 20)
  t.equal(new Set(indexes).size, 20, 'twenty different indexes')
  for (const [at, statusIndex] of indexes.entries()) {
    t.match((await store.findOAuthModel(CLIENT_TOKEN_STATUS_KIND, String(statusIndex), new Date()))?.payload, { clientId: 'machine', jti: `jti-${at}` })
  }
  await clientTokens.issue({ clientId: 'machine', jti: 'later', expiresAt: expiresAt() })
  t.equal(batches.length, 2, 'a token of a later turn, in a transaction of its own')
})

t.test('an index held by another token is drawn again, in the next transaction', async (t) => {
  let rivalled = false
  const { store, recorded, batches } = await recordedStore(t, async (claims) => {
    if (rivalled) return
    rivalled = true
    // Another instance takes the first claim's index just before this transaction.
    await store.claimOAuthModel(CLIENT_TOKEN_STATUS_KIND, claims[0].id, { clientId: 'rival', jti: 'rival' }, expiresAt(), new Date())
  })
  const clientTokens = createClientTokenStatus({ store: recorded, clock: testClock() })
  const indexes = await Promise.all(['first', 'second', 'third'].map(jti => clientTokens.issue({ clientId: 'machine', jti, expiresAt: expiresAt() })))
  t.same(batches.map(batch => batch.length), [3, 1], 'the one that collided drew again, alone')
  t.not(String(indexes[0]), batches[0][0].id, 'its index is not the rival\'s')
  t.match((await store.findOAuthModel(CLIENT_TOKEN_STATUS_KIND, batches[0][0].id, new Date()))?.payload, { jti: 'rival' }, 'the rival keeps its row')
  t.match((await store.findOAuthModel(CLIENT_TOKEN_STATUS_KIND, String(indexes[0]), new Date()))?.payload, { jti: 'first' })
})

t.test('a token whose every draw collides is refused after 16, and the others of its turn are not held up', async (t) => {
  const { store, recorded, batches } = await recordedStore(t, async (claims) => {
    const doomed = claims.find(claim => claim.payload.jti === 'doomed')
    if (doomed !== undefined) await store.claimOAuthModel(CLIENT_TOKEN_STATUS_KIND, doomed.id, { jti: 'rival' }, expiresAt(), new Date())
  })
  const clientTokens = createClientTokenStatus({ store: recorded, clock: testClock() })
  const [doomed, fine] = await Promise.allSettled(['doomed', 'fine'].map(jti => clientTokens.issue({ clientId: 'machine', jti, expiresAt: expiresAt() })))
  t.match(doomed, { status: 'rejected', reason: { message: 'no free client-token status index after 16 draws' } })
  t.equal(fine.status, 'fulfilled')
  t.equal(batches.length, 16)
})

t.test('a failed transaction fails the tokens of its turn, and the next turn claims again', async (t) => {
  let fail = true
  const { recorded } = await recordedStore(t, async () => {
    if (fail) throw new Error('the store is unavailable')
  })
  const clientTokens = createClientTokenStatus({ store: recorded, clock: testClock() })
  const settled = await Promise.allSettled([clientTokens.issue({ clientId: 'm', jti: 'a', expiresAt: expiresAt() }), clientTokens.issue({ clientId: 'm', jti: 'b', expiresAt: expiresAt() })])
  t.same(settled.map(outcome => outcome.status), ['rejected', 'rejected'])
  fail = false
  t.type(await clientTokens.issue({ clientId: 'm', jti: 'c', expiresAt: expiresAt() }), 'number')
})

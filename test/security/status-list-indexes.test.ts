import { getListFromStatusListJWT, getStatusListFromJWT } from '@sd-jwt/jwt-status-list'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { assignRandomStatusIndex, DRAWS_BEFORE_GROWING, STATUS_LIST_SIZE } from '../../core/revocations/status-list.js'
import { build } from '../fixtures/build.js'
import { testStore } from '../fixtures/database.js'
import { loggedInUser, type Session } from '../fixtures/factories.js'

// Issue 21, finding 12: status-list indexes came from a counter. Anyone holding a token read the
// sessions begun since (the next indexes) and watched them; the draft recommends random indexes.
const PUBLIC_URL = 'https://accounts.example.com'
const SESSIONS = 12

/** The bit of the token's index in the signed list its claim points to, as a resource server reads it. */
async function bitOf (server: FastifyInstance, accessToken: string): Promise<number> {
  const { idx, uri } = getStatusListFromJWT(accessToken)
  const response = await server.inject(new URL(uri).pathname)
  return getListFromStatusListJWT(response.body).getStatus(idx)
}

t.test('the status indexes of consecutive sessions are random: distinct, unordered, spread over the list', async (t) => {
  const server = await build(t, { variant: 'header', env: { PUBLIC_URL } })
  const sessions: Session[] = []
  for (let i = 0; i < SESSIONS; i++) sessions.push(await loggedInUser(server, 'header'))
  const indexes = sessions.map(session => getStatusListFromJWT(session.accessToken).idx)
  t.equal(new Set(indexes).size, SESSIONS, 'every session has an index of its own')
  t.ok(indexes.every(index => Number.isInteger(index) && index >= 0 && index < STATUS_LIST_SIZE), 'all in the first list')
  const steps = indexes.slice(1).map((index, i) => index - indexes[i])
  t.notOk(steps.every(step => step === 1), 'not consecutive')
  t.notOk(steps.every(step => step > 0), 'not in the order the sessions began')
  t.ok(Math.max(...indexes) - Math.min(...indexes) > 1000, `spread over the list: ${indexes.join(', ')}`)

  // A revocation still sets the bit of exactly its session.
  const revoked = sessions[5]
  const logout = await server.inject({ method: 'POST', url: '/auth/logout', headers: { 'x-refresh-token': `Bearer ${revoked.refreshToken}` } })
  t.equal(logout.statusCode, 204)
  const started = Date.now()
  let bit = 0
  while (bit === 0 && Date.now() - started <= 1250) {
    bit = await bitOf(server, revoked.accessToken)
    if (bit === 0) await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.equal(bit, 1, 'INVALID after the logout (the list is signed again at most once a second)')
  for (const session of sessions.filter(session => session !== revoked)) {
    t.equal(await bitOf(server, session.accessToken), 0, `index ${getStatusListFromJWT(session.accessToken).idx} stays VALID`)
  }
})

t.test('a status index is claimed once: not while a session holds it, nor while a revoked session\'s bit sets it', async (t) => {
  const store = await testStore(t)
  const user = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: null })
  const later = new Date(Date.now() + 60_000)
  for (const id of ['s1', 's2', 's3']) {
    await store.createSession({ id, userId: user.id, userAgent: null, ip: null }, new Date())
    await store.createRefreshToken({ tokenHash: `${id}-token`, userId: user.id, familyId: id, expiresAt: later })
  }
  t.equal(await store.highestStatusIndex(), null, 'no index held yet')
  t.equal(await store.claimStatusIndex('s1', 700_000), true)
  t.equal(await store.claimStatusIndex('s2', 700_000), false, 'a held index is refused')
  t.equal(await store.claimStatusIndex('s2', 12), true)
  t.equal(await store.highestStatusIndex(), 700_000)
  t.equal((await store.findRefreshToken('s1-token'))?.statusIndex, 700_000, 'the session\'s tokens know it')

  t.ok(await store.deleteUser(user.id), 'the user goes, and its sessions with their indexes')
  const other = await store.createUser({ firstName: 'Bob', lastName: 'B', username: null, email: 'bob@example.com', passwordHash: null })
  await store.createSession({ id: 's4', userId: other.id, userAgent: null, ip: null }, new Date())
  t.equal(await store.claimStatusIndex('s4', 700_000), false, 'refused while the revocation log sets its bit')
  // A row for each of its three sessions, and the user-change row of its deletion (migration 0014).
  t.equal(await store.pruneRevocations(new Date(Date.now() + 60_000)), 4)
  t.equal(await store.claimStatusIndex('s4', 700_000), true, 'free again once the log row is gone')
})

t.test('the range grows by a list when the lists in use are crowded, and stays random', async (t) => {
  const held = new Set<number>()
  const claims: number[] = []
  // Every index of list 1 is taken: a draw below STATUS_LIST_SIZE always collides.
  const store = {
    highestStatusIndex: async () => STATUS_LIST_SIZE - 1,
    claimStatusIndex: async (_sessionId: string, statusIndex: number) => {
      claims.push(statusIndex)
      if (statusIndex < STATUS_LIST_SIZE || held.has(statusIndex)) return false
      held.add(statusIndex)
      return true
    }
  }
  const bounds: number[] = []
  const index = await assignRandomStatusIndex(store, 'session', below => { bounds.push(below); return below - 1 - bounds.length })
  t.ok(index >= STATUS_LIST_SIZE && index < 2 * STATUS_LIST_SIZE, 'in list 2')
  t.same(bounds, [...Array(DRAWS_BEFORE_GROWING).fill(STATUS_LIST_SIZE), 2 * STATUS_LIST_SIZE], `${DRAWS_BEFORE_GROWING} draws from list 1, then from lists 1 and 2`)
  const fromCrypto = await assignRandomStatusIndex({ ...store, highestStatusIndex: async () => null, claimStatusIndex: async () => true }, 'other')
  t.ok(fromCrypto >= 0 && fromCrypto < STATUS_LIST_SIZE, 'the default draw is within list 1 on a fresh store')
})

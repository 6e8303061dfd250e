import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { AccountStore } from '../../../db/store.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { storeWith } from '../../../core/revocations/following-store.js'
import { createRevocations, FRESHNESS_MS, POLL_INTERVAL_MS, type FollowedRevocations } from '../../../core/revocations/revocations.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { eventually } from '../../fixtures/eventually.js'

const TTL_SECONDS = 60
const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })

/** A user with sessions of these ids, each with a live refresh token. */
async function userWithSessions (store: AccountStore, clock: TestClock, email: string, sessionIds: string[]): Promise<number> {
  const user = await store.createUser(newUser(email))
  for (const id of sessionIds) {
    await store.createSession({ id, userId: user.id, userAgent: null, ip: null }, new Date(clock.now()))
    await store.createRefreshToken({ tokenHash: `${id}-token`, userId: user.id, familyId: id, expiresAt: new Date(clock.now() + 3_600_000) })
  }
  return user.id
}

interface Fixture {
  raw: AccountStore
  clock: TestClock
  followed: FollowedRevocations
  /** The store's own sessionState calls and log reads, and the warnings logged. */
  counts: { asked: number, reads: number }
  warnings: string[]
  /** Makes every read of the log fail. */
  failReads (failing: boolean): void
  now (): Date
}

async function follow (t: Test, { before }: { before?: (raw: AccountStore, clock: TestClock) => Promise<void> } = {}): Promise<Fixture> {
  const raw = await testStore(t)
  const clock = testClock()
  await before?.(raw, clock)
  const counts = { asked: 0, reads: 0 }
  let failing = false
  const store = storeWith(raw, {
    async sessionState (sessionId, now) { counts.asked++; return await raw.sessionState(sessionId, now) },
    async readRevocations (after, since, limit) {
      counts.reads++
      if (failing) throw new Error('store down')
      return await raw.readRevocations(after, since, limit)
    }
  })
  const warnings: string[] = []
  const log: Logger = { ...silentLogger, warn: (_object: object | string, message?: string) => { warnings.push(message ?? '') } }
  const followed = await createRevocations({ store, clock, log }, { accessTokenTtlSeconds: TTL_SECONDS })
  t.teardown(() => followed.close())
  return { raw, clock, followed, counts, warnings, failReads: (value) => { failing = value }, now: () => new Date(clock.now()) }
}

t.test('a revocation through the followed store is in the set before the call returns; the set answers without the store', async (t) => {
  const { raw, clock, followed: { store, revocations }, counts, now } = await follow(t)
  const userId = await userWithSessions(raw, clock, 'ada@example.com', ['s1', 's2', 's3'])
  await store.revokeFamily('s1', now())
  t.equal(await revocations.sessionState('s1', now()), 'revoked')
  t.equal(await store.revokeUserSessions(userId, now(), { exceptFamilyId: 's3' }), 1)
  t.equal(await store.sessionState('s2', now()), 'revoked', 'the followed store answers from the set too')
  t.equal(await store.sessionState('s3', now()), 'live')
  t.equal(counts.asked, 0, 'the store was never asked')
})

t.test('a deleted user\'s sessions are unknown', async (t) => {
  const { raw, clock, followed: { store, revocations }, now } = await follow(t)
  const userId = await userWithSessions(raw, clock, 'ada@example.com', ['s1'])
  await store.deleteUser(userId)
  t.equal(await revocations.sessionState('s1', now()), 'unknown')
})

t.test('revocations made elsewhere: those in the log at the start are known, later ones once the log is read again', async (t) => {
  const { raw, clock, followed: { revocations }, failReads, now } = await follow(t, {
    async before (raw, clock) {
      await userWithSessions(raw, clock, 'bob@example.com', ['earlier'])
      await raw.revokeFamily('earlier', new Date(clock.now()))
    }
  })
  t.equal(await revocations.sessionState('earlier', now()), 'revoked', 'read at the start')
  failReads(true) // no background read comes between
  await userWithSessions(raw, clock, 'ada@example.com', ['s1'])
  await raw.revokeFamily('s1', now())
  t.equal(await revocations.sessionState('s1', now()), 'live', 'not read yet, and the set is fresh')
  failReads(false)
  await revocations.catchUp()
  t.equal(await revocations.sessionState('s1', now()), 'revoked')
})

t.test('a set not read for over FRESHNESS_MS asks the store, so a revocation elsewhere is never missed longer', async (t) => {
  const { raw, clock, followed: { revocations }, counts, failReads, now } = await follow(t)
  failReads(true) // the log cannot be read: the store's answer is the only way to learn of it
  await userWithSessions(raw, clock, 'ada@example.com', ['s1'])
  await raw.revokeFamily('s1', now())
  clock.advance(FRESHNESS_MS)
  t.ok(revocations.isFresh(), `fresh ${FRESHNESS_MS} ms after the last read`)
  clock.advance(1)
  t.notOk(revocations.isFresh())
  t.equal(await revocations.sessionState('s1', now()), 'revoked')
  t.equal(counts.asked, 1, 'from the store')
})

t.test('revocations are forgotten once ACCESS_TOKEN_TTL and 5 s have passed', async (t) => {
  const { raw, clock, followed: { store, revocations }, now } = await follow(t)
  await userWithSessions(raw, clock, 'ada@example.com', ['s1'])
  await store.revokeFamily('s1', now())
  clock.advance(TTL_SECONDS * 1000 + 5000)
  await revocations.catchUp()
  t.equal(revocations.set.size, 1, 'kept 5 s beyond ACCESS_TOKEN_TTL (leeway and clock skew)')
  clock.advance(1)
  await revocations.catchUp()
  t.equal(revocations.set.size, 0)
})

t.test('a revocation whose log read fails still succeeds; the set goes stale and it is logged', async (t) => {
  const { raw, clock, followed: { store, revocations }, warnings, failReads, now } = await follow(t)
  await userWithSessions(raw, clock, 'ada@example.com', ['s1'])
  failReads(true)
  await store.revokeFamily('s1', now())
  t.notOk(revocations.isFresh(), 'the store is asked per request')
  t.equal(await revocations.sessionState('s1', now()), 'revoked')
  t.match(warnings, [/revocation log not read after a revocation/])
})

t.test('the log is followed in the background; a failing read is logged once a minute at most; close stops it', async (t) => {
  const { raw, clock, followed: { revocations, close }, counts, warnings, failReads, now } = await follow(t)
  await userWithSessions(raw, clock, 'ada@example.com', ['s1'])
  await raw.revokeFamily('s1', now())
  t.ok(await eventually(async () => await revocations.sessionState('s1', now()) === 'revoked'), 'read without being asked')

  failReads(true)
  const reads = counts.reads
  t.ok(await eventually(() => counts.reads >= reads + 3), 'polls go on failing')
  t.same(warnings, ['revocation log not read; checking the store per request until it is'], 'logged once')
  clock.advance(60_000)
  t.ok(await eventually(() => warnings.length === 2), 'and again a minute later')

  await close()
  const readsAtClose = counts.reads
  await sleep(POLL_INTERVAL_MS * 3)
  t.equal(counts.reads, readsAtClose, 'no read after close')
})

t.test('user-change rows reach the listeners; a changing write through the followed store has them read before it returns', async (t) => {
  const { raw, clock, followed: { store, revocations }, failReads } = await follow(t)
  const told: Array<number | undefined> = []
  revocations.onUserChange((userId) => { told.push(userId) })
  const ada = await userWithSessions(raw, clock, 'ada@example.com', ['s1'])
  const bob = await userWithSessions(raw, clock, 'bob@example.com', [])

  await store.updateUser(ada, { firstName: 'Augusta' })
  t.same(told, [ada], 'a profile update: read before it returned')
  await store.changeEmail(bob, { email: 'robert@example.com' }, new Date(clock.now()), { to: 'bob@example.com', subject: 's', text: 't' })
  t.same(told, [ada, bob], 'an email change')
  await raw.updateUser(bob, { lastName: 'Builder' })
  t.same(told, [ada, bob], 'a change made elsewhere waits for the log to be read')
  await revocations.catchUp()
  t.same(told, [ada, bob, bob], 'and is told then')
  await store.deleteUser(ada)
  t.same(told, [ada, bob, bob, ada], 'a deletion')

  // The log not read for longer than FRESHNESS_MS: what it held meanwhile may be gone, so listeners hear "anyone".
  failReads(true)
  await revocations.catchUp().catch(() => {})
  clock.advance(FRESHNESS_MS + 1)
  failReads(false)
  await revocations.catchUp()
  t.same(told, [ada, bob, bob, ada, undefined], 'a sync after a stale time says that any user may have changed')
  await revocations.catchUp()
  t.equal(told.length, 5, 'a sync in time says nothing more')
})

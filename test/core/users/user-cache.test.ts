import t from 'tap'
import type { UserRecord, UsersStore } from '../../../db/store.js'
import { createUserCache, FIRST_SLOTS, UNVERIFIED_EMAIL_RECHECK_MS } from '../../../core/users/user-cache.js'

const user = (id: number, firstName = 'Ada'): UserRecord => ({
  id,
  firstName,
  lastName: 'Lovelace',
  username: null,
  email: `user${id}@example.com`,
  passwordHash: 'hash',
  emailVerified: false,
  emailVerifiedAt: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  role: 'user',
  disabledAt: null,
  lastLoginAt: null
})

/** A store of users by id that counts its reads, and a log follower the test drives. */
function fixture (max: number) {
  const rows = new Map<number, UserRecord>([[1, user(1)], [2, user(2)], [3, user(3)]])
  const reads = { count: 0 }
  let beforeAnswer: (() => void) | undefined
  const store: Pick<UsersStore, 'findUserById'> = {
    async findUserById (id) {
      reads.count++
      const row = rows.get(id)
      beforeAnswer?.()
      return row === undefined ? undefined : { ...row }
    }
  }
  const listeners: Array<(userId: number | undefined) => void> = []
  const follower = { fresh: true }
  const revocations = {
    isFresh: () => follower.fresh,
    onUserChange: (listener: (userId: number | undefined) => void) => { listeners.push(listener) }
  }
  const cache = createUserCache({ store, revocations }, { max })
  const change = (userId: number | undefined) => { for (const listener of listeners) listener(userId) }
  return { cache, rows, reads, follower, change, whileReading: (action: (() => void) | undefined) => { beforeAnswer = action } }
}

t.test('a user read once is answered from memory, with only the fields GET /users/:id shows', async (t) => {
  const { cache, reads } = fixture(10)
  t.equal(cache.peek(1), undefined, 'nothing kept before the first read')
  t.same(await cache.find(1), { id: 1, firstName: 'Ada', lastName: 'Lovelace', email: 'user1@example.com', username: null })
  t.equal(reads.count, 1)
  t.same(cache.peek(1), await cache.find(1))
  t.equal(reads.count, 1, 'no second store read')
  t.notOk('passwordHash' in (cache.peek(1) ?? {}), 'no password hash kept')
  t.equal(await cache.find(99), undefined, 'an unknown user')
  t.equal(cache.size, 1, 'an unknown user is not kept')
})

t.test('a user-change row drops that user; "anyone" drops all', async (t) => {
  const { cache, rows, reads, change } = fixture(10)
  await cache.find(1)
  await cache.find(2)
  rows.set(1, user(1, 'Augusta'))
  change(1)
  t.equal(cache.peek(1), undefined, 'the changed user is gone')
  t.ok(cache.peek(2), 'the other stays')
  t.equal((await cache.find(1))?.firstName, 'Augusta', 'read again: the new name')
  t.equal(reads.count, 3)
  change(undefined)
  t.equal(cache.size, 0)
})

t.test('while the log is not followed, nothing is answered from memory nor kept', async (t) => {
  const { cache, reads, follower } = fixture(10)
  await cache.find(1)
  follower.fresh = false
  t.equal(cache.peek(1), undefined)
  await cache.find(1)
  await cache.find(2)
  t.equal(reads.count, 3, 'the store answers every read')
  follower.fresh = true
  t.equal(cache.peek(2), undefined, 'what was read meanwhile was not kept')
  t.ok(cache.peek(1))
})

t.test('a read that a change overtakes is answered but not kept', async (t) => {
  const { cache, reads, change, whileReading } = fixture(10)
  whileReading(() => { change(1) })
  t.equal((await cache.find(1))?.id, 1, 'answered')
  whileReading(undefined)
  t.equal(cache.peek(1), undefined, 'not kept: it may predate the change')
  await cache.find(1)
  t.ok(cache.peek(1), 'the next read is kept')
  t.equal(reads.count, 2)
})

t.test('the cache is bounded: past USER_CACHE_MAX the least recently read goes; 0 keeps none', async (t) => {
  const { cache } = fixture(2)
  await cache.find(1)
  await cache.find(2)
  cache.peek(1)
  await cache.find(3)
  t.equal(cache.size, 2)
  t.equal(cache.peek(2), undefined, 'the least recently read went')
  t.ok(cache.peek(1) !== undefined && cache.peek(3) !== undefined)

  const none = fixture(0)
  await none.cache.find(1)
  t.equal(none.cache.peek(1), undefined)
  t.equal(none.cache.size, 0)
})

t.test('the cache grows from FIRST_SLOTS to USER_CACHE_MAX as users are kept, the least recently read still going first', async (t) => {
  const max = FIRST_SLOTS * 5
  const { cache, rows } = fixture(max)
  for (let id = 4; id <= max + 1; id++) rows.set(id, user(id))
  for (let id = 1; id <= FIRST_SLOTS; id++) await cache.find(id)
  // User 1 read again before the cache grows: it is the most recently read, and is kept when user 2 goes.
  cache.peek(1)
  for (let id = FIRST_SLOTS + 1; id <= max + 1; id++) await cache.find(id)
  t.equal(cache.size, max, 'bounded by USER_CACHE_MAX across its growth')
  t.equal(cache.peek(2), undefined, 'the least recently read went')
  t.not(cache.peek(1), undefined, 'the order was kept when the cache grew')
  t.not(cache.peek(3), undefined)
  t.not(cache.peek(max + 1), undefined)
})

t.test('userinfo\'s read: a kept verified email stands; a kept unverified one is read again after UNVERIFIED_EMAIL_RECHECK_MS', async (t) => {
  const rows = new Map<number, UserRecord>([[1, user(1)], [2, { ...user(2), emailVerified: true }]])
  const reads = { count: 0 }
  const store: Pick<UsersStore, 'findUserById'> = { async findUserById (id) { reads.count++; const row = rows.get(id); return row === undefined ? undefined : { ...row } } }
  let now = 1_000_000
  const cache = createUserCache({ store, revocations: { isFresh: () => true, onUserChange: () => {} }, clock: { now: () => now } }, { max: 10 })
  t.match(await cache.findWithEmailVerified(1), { shown: { id: 1, email: 'user1@example.com' }, emailVerified: false })
  t.match(await cache.findWithEmailVerified(2), { emailVerified: true })
  t.equal(reads.count, 2)
  rows.set(1, { ...user(1), emailVerified: true })
  now += UNVERIFIED_EMAIL_RECHECK_MS - 1
  t.equal((await cache.findWithEmailVerified(1))?.emailVerified, false, 'kept a while')
  await cache.findWithEmailVerified(2)
  t.equal(reads.count, 2, 'both from memory')
  now += 1
  t.equal((await cache.findWithEmailVerified(1))?.emailVerified, true, 'then read again: verified')
  t.equal(reads.count, 3)
  now += 10 * UNVERIFIED_EMAIL_RECHECK_MS
  await cache.findWithEmailVerified(1)
  await cache.findWithEmailVerified(2)
  t.equal(reads.count, 3, 'a verified email stands (it turns unverified only with a new address, which drops the user)')
  t.same(await cache.find(1), { id: 1, firstName: 'Ada', lastName: 'Lovelace', email: 'user1@example.com', username: null }, 'GET /users/:id\'s read shows what it showed')
})

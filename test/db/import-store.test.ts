import t from 'tap'
import { testStore } from '../fixtures/database.js'

// importUsers on the backend under test (TEST_STORE), as every file of test/db does.

const user = (email: string, username: string | null = null, emailVerified = false) =>
  ({ firstName: 'Ada', lastName: 'Lovelace', username, email, passwordHash: null, emailVerified })

t.test('a batch is written in order, each row unless its email or username is taken', async (t) => {
  const store = await testStore(t)
  await store.createUser({ firstName: 'Old', lastName: 'User', username: 'Taken', email: 'old@example.com', passwordHash: 'hash' })
  const now = new Date('2026-01-02T03:04:05.000Z')
  const outcomes = await store.importUsers([
    user('a@example.com', 'ada', true),
    user('old@example.com', 'other'),
    user('b@example.com', 'taken'),
    user('a@example.com', 'ada2'),
    user('c@example.com', 'ADA'),
    user('d@example.com'),
    user('e@example.com')
  ], now)
  t.same(outcomes, ['imported', 'email_taken', 'username_taken', 'email_taken', 'username_taken', 'imported', 'imported'])
  const ada = await store.findUserByEmail('a@example.com')
  t.match(ada, { username: 'ada', emailVerified: true, passwordHash: null })
  t.equal(ada?.emailVerifiedAt?.getTime(), now.getTime())
  t.equal(ada?.createdAt.getTime(), now.getTime())
  t.match(await store.findUserByEmail('d@example.com'), { emailVerified: false, emailVerifiedAt: null })
  t.equal((await store.findUserByEmail('old@example.com'))?.firstName, 'Old', 'a taken email leaves its user alone')
  t.equal(await store.findUserByEmail('b@example.com'), undefined)
  t.same(await store.importUsers([], now), [])
})

t.test('a batch of 500 in one call', async (t) => {
  const store = await testStore(t)
  const batch = Array.from({ length: 500 }, (_, index) => user(`user${index}@example.com`, `user${index}`))
  t.same(new Set(await store.importUsers(batch, new Date())), new Set(['imported']))
  t.same(await store.importUsers(batch.slice(0, 2), new Date()), ['email_taken', 'email_taken'], 'again: every row taken')
  t.equal((await store.listUsers({ limit: 1000 })).length, 500)
})

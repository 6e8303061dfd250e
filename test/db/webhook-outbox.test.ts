import t from 'tap'
import { openStore } from '../../db/open.js'
import { testDatabaseUrl, testStore } from '../fixtures/database.js'
import { DuplicateValueError } from '../../db/store.js'

const event = (messageId: string) => ({ messageId, type: 'user.created', payload: `{"type":"user.created","data":{"n":"${messageId}"}}` })
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms)
const LEASE = 60_000
const ids = (claimed: Array<{ messageId: string }>) => claimed.map(message => message.messageId)

t.test('a claimed event is leased: nobody claims it again until the lease ends, then it is claimed with one more attempt', async (t) => {
  const store = await testStore(t)
  await store.enqueueWebhooks([event('msg_1'), event('msg_2')], at(0))
  const claimed = await store.claimWebhooks(at(10), at(10 + LEASE), 1)
  t.match(claimed, [{ messageId: 'msg_1', type: 'user.created', payload: event('msg_1').payload, attempts: 1 }], 'oldest first, its first attempt')
  t.same(ids(await store.claimWebhooks(at(20), at(20 + LEASE), 5)), ['msg_2'], 'the leased one is not claimed again')
  t.same(await store.claimWebhooks(at(30), at(30 + LEASE), 5), [])
  const again = await store.claimWebhooks(at(10 + LEASE), at(10 + 2 * LEASE), 5)
  t.same(ids(again), ['msg_1'], 'a lease that ran out (its worker died) frees the event')
  t.equal(again[0].attempts, 2, 'with one more attempt')
  t.equal(again[0].payload, event('msg_1').payload, 'and the same body, to sign again')
  t.equal(await store.countPendingWebhooks(), 2)
})

t.test('events are claimed in the order they were written', async (t) => {
  const store = await testStore(t)
  await store.enqueueWebhooks([event('msg_a'), event('msg_b')], at(0))
  await store.enqueueWebhooks([event('msg_c')], at(1))
  t.same(ids(await store.claimWebhooks(at(10), at(10 + LEASE), 10)), ['msg_a', 'msg_b', 'msg_c'])
})

t.test('a message id is written once', async (t) => {
  const store = await testStore(t)
  await store.enqueueWebhooks([event('msg_once')], at(0))
  await t.rejects(store.enqueueWebhooks([event('msg_once')], at(1)), 'refused')
  await store.enqueueWebhooks([], at(2))
  t.equal(await store.countPendingWebhooks(), 1)
})

t.test('an event not yet due is not claimed; a retry makes it due later, unclaimed', async (t) => {
  const store = await testStore(t)
  await store.enqueueWebhooks([event('msg_later')], at(0))
  const [claimed] = await store.claimWebhooks(at(0), at(LEASE), 1)
  await store.retryWebhook(claimed.id, at(5000), 'HTTP 500')
  t.same(await store.claimWebhooks(at(4999), at(4999 + LEASE), 1), [], 'not before retryAt')
  t.match(await store.claimWebhooks(at(5000), at(5000 + LEASE), 1), [{ id: claimed.id, messageId: 'msg_later', attempts: 2 }], 'at retryAt, though its lease had not run out')
})

t.test('delivered and given-up events are never claimed, count as pending no more, and are pruned after they finished', async (t) => {
  const store = await testStore(t)
  await store.enqueueWebhooks([event('delivered'), event('failed'), event('pending')], at(0))
  const [delivered, failed] = await store.claimWebhooks(at(0), at(LEASE), 2)
  await store.markWebhookDelivered(delivered.id, at(100))
  await store.markWebhookFailed(failed.id, at(200), 'HTTP 410')
  t.equal(await store.countPendingWebhooks(), 1)
  t.same(ids(await store.claimWebhooks(at(LEASE), at(2 * LEASE), 5)), ['pending'], 'only the pending one')
  t.equal(await store.pruneWebhooks(at(99), 100), 0, 'nothing finished that early')
  t.equal(await store.pruneWebhooks(at(150), 100), 1, 'the delivered one')
  t.equal(await store.pruneWebhooks(at(1000), 100), 1, 'the given-up one')
  t.equal(await store.pruneWebhooks(at(1000), 100), 0, 'a pending event is never pruned')
  t.equal(await store.countPendingWebhooks(), 1)
})

t.test('two stores on one database claiming at once never claim one event twice', async (t) => {
  // Two connections (two processes on one SQLite file, or two PostgreSQL instances).
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const first = await openStore(databaseUrl)
  t.teardown(() => first.close())
  const second = await openStore(databaseUrl)
  t.teardown(() => second.close())
  const count = 60
  await first.enqueueWebhooks(Array.from({ length: count }, (_, n) => event(`msg_${n}`)), at(0))
  const claims = await Promise.all(Array.from({ length: 40 }, (_, n) => (n % 2 === 0 ? first : second).claimWebhooks(at(10), at(10 + LEASE), 2)))
  const claimed = claims.flat().map(message => message.id)
  t.equal(claimed.length, count, 'every event claimed')
  t.equal(new Set(claimed).size, count, 'none twice')
})

t.test('a change and the event it sends are written in one transaction: both, or neither', async (t) => {
  const store = await testStore(t)
  const outgoing = (messageId: string) => ({ ...event(messageId), createdAt: at(0) })
  const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: null })
  const ada = await store.createUser(newUser('ada@example.com'), (created) => ({ ...outgoing('msg_created'), payload: `{"id":${created.id}}` }))
  await t.rejects(store.createUser(newUser('ada@example.com'), () => outgoing('msg_taken')), DuplicateValueError, 'a taken email')
  await store.updateUser(ada.id, { firstName: 'Grace' }, () => outgoing('msg_updated'))
  t.equal(await store.updateUser(ada.id + 100, { firstName: 'Nobody' }, () => outgoing('msg_nobody')), undefined, 'no such user')
  // The event's own id is taken: the change it came with is not written either.
  await t.rejects(store.updateUser(ada.id, { firstName: 'Refused' }, () => outgoing('msg_updated')))
  t.equal((await store.findUserById(ada.id))?.firstName, 'Grace', 'the change whose event was refused did not happen')
  const row = { type: 'login', userId: ada.id, sessionId: null, ip: null, userAgent: null, requestId: null, detail: null, createdAt: at(0) }
  await store.recordSecurityEvent(row, outgoing('msg_event'))
  await t.rejects(store.recordSecurityEvent(row, outgoing('msg_event')), 'an event whose webhook is refused')
  t.equal((await store.listSecurityEvents(ada.id, { limit: 10 })).length, 1, 'is not stored either')
  t.equal(await store.deleteUser(ada.id + 100, outgoing('msg_no_delete')), false)
  t.ok(await store.deleteUser(ada.id, outgoing('msg_deleted')))
  const claimed = await store.claimWebhooks(at(10), at(10 + LEASE), 10)
  t.same(ids(claimed), ['msg_created', 'msg_updated', 'msg_event', 'msg_deleted'])
  t.equal(claimed[0].payload, `{"id":${ada.id}}`, 'built from what the change wrote')
})

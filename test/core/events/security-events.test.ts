import t from 'tap'
import type { AccountStore } from '../../../db/store.js'
import { createSecurityEvents } from '../../../core/events/security-events.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

const client = { ip: '203.0.113.7', userAgent: 'Firefox', requestId: 'req-1' }

/** A logger that keeps each line: its level, its object and its message. */
function recordingLogger (): Logger & { lines: Array<{ level: string, object: object, message?: string }> } {
  const lines: Array<{ level: string, object: object, message?: string }> = []
  const at = (level: string) => (object: object | string, message?: string) => {
    lines.push(typeof object === 'string' ? { level, object: {}, message: object } : { level, object, message })
  }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

t.test('a recorded event is stored at the clock\'s time, with its address, device and request, and listed to its user', async (t) => {
  const store = await testStore(t)
  const clock = testClock(Date.parse('2030-01-02T03:04:05Z'))
  const events = createSecurityEvents({ store, clock, log: silentLogger })
  const ada = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'hash' })
  await events.record('login', client, { userId: ada.id, sessionId: 's1' })
  clock.advance(1000)
  await events.record('password_changed', client, { userId: ada.id, detail: { reason: 'test' } })
  await events.record('login_failed', client, { userId: null })
  const listed = await events.list(ada.id, { limit: 10 })
  t.match(listed, [
    { type: 'password_changed', sessionId: null, detail: { reason: 'test' } },
    { type: 'login', sessionId: 's1', ip: client.ip, userAgent: client.userAgent, requestId: client.requestId }
  ], 'newest first, its own only')
  t.equal(listed.length, 2)
  t.same(listed.map(event => event.createdAt.getTime()), [clock.now(), clock.now() - 1000], 'at the clock\'s time')
  t.same((await events.list(ada.id, { limit: 10, beforeId: listed[0].id })).map(event => event.type), ['login'], 'paged by id')
})

t.test('each event is one log line with an `event` field', async (t) => {
  const log = recordingLogger()
  const events = createSecurityEvents({ store: await testStore(t), clock: testClock(), log })
  await events.record('login_failed', client, { userId: null })
  t.match(log.lines, [{ level: 'info', object: { event: 'login_failed', userId: null, ip: client.ip, reqId: client.requestId }, message: 'security event: login_failed' }])
})

t.test('a store that fails to keep an event fails nothing: the error is logged', async (t) => {
  const log = recordingLogger()
  const failing: Pick<AccountStore, 'recordSecurityEvent' | 'listSecurityEvents'> = {
    recordSecurityEvent: async () => { throw new Error('store down') },
    listSecurityEvents: async () => []
  }
  const events = createSecurityEvents({ store: failing, clock: testClock(), log })
  await events.record('session_revoked', client, { userId: 1 })
  t.match(log.lines.at(-1), { level: 'error', object: { err: { message: 'store down' }, userId: 1 }, message: 'security event not stored' })
})

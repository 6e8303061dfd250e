import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { createSecurityEvents, type EventSubject, type SecurityEventType } from '../../../core/events/security-events.js'
import type { Logger } from '../../../core/logger.js'
import { silentLogger } from '../../../core/logger.js'
import { retryDelayMs, RETRY_DELAYS_MS } from '../../../core/webhooks/webhook-sender.js'
import { createWebhooks, type WebhooksOptions } from '../../../core/webhooks/webhooks.js'
import type { AccountStore } from '../../../db/store.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { startWebhookReceiver, WEBHOOK_SECRET } from '../../fixtures/webhook-receiver.js'

const CLIENT = { ip: null, userAgent: null, requestId: null }

const presentUser = (user: { id: number, email: string }) => ({ id: user.id, email: user.email })

/** A logger that keeps its error and warning lines. */
function recordingLogger () {
  const lines: Array<{ level: string, message: string, fields: Record<string, unknown> }> = []
  const at = (level: string) => (fields: unknown, message?: string) => { lines.push({ level, message: message ?? String(fields), fields: typeof fields === 'object' ? fields as Record<string, unknown> : {} }) }
  const log = { ...silentLogger, error: at('error'), warn: at('warn') } as unknown as Logger
  return { log, lines }
}

async function webhooksFor (t: Test, url: string | undefined, { maxAttempts = 8, store, log = silentLogger, timeoutMs }: { maxAttempts?: number, store?: AccountStore, log?: Logger, timeoutMs?: number } = {}) {
  store ??= await testStore(t)
  const clock = testClock()
  const options: WebhooksOptions = { webhooks: url === undefined ? undefined : { url, secret: WEBHOOK_SECRET, maxAttempts }, timeoutMs, stopWaitMs: 1000 }
  // The webhooks subscribe to the security events, as the app wires them.
  const securityEvents = createSecurityEvents({ store, clock, log })
  const webhooks = createWebhooks({ store, clock, log, presentUser, securityEvents }, options)
  webhooks.start()
  t.teardown(() => webhooks.close())
  return { webhooks, securityEvents, store, clock }
}

t.test('an event is POSTed signed (Standard Webhooks), with the body { type, timestamp, data }', async (t) => {
  const receiver = await startWebhookReceiver(t)
  const { webhooks, clock } = await webhooksFor(t, receiver.url)
  await webhooks.emit('session.created', { user_id: 7, session_id: 'family-1' })
  await webhooks.idle()
  t.equal(receiver.unverified.length, 0, 'the signature verifies')
  t.match(receiver.received, [{ id: /^msg_[A-Za-z0-9_-]{22}$/, type: 'session.created', timestamp: new Date(clock.now()).toISOString(), data: { user_id: 7, session_id: 'family-1' } }])
  t.equal(webhooks.delivered, 1)
  t.equal(await webhooks.queued(), 0)
})

t.test('a wrong secret does not verify (the receiver really checks)', async (t) => {
  const receiver = await startWebhookReceiver(t, `whsec_${Buffer.alloc(32, 1).toString('base64')}`)
  const { webhooks } = await webhooksFor(t, receiver.url, { maxAttempts: 1 })
  await webhooks.emit('mfa.changed', { user_id: 1 })
  await webhooks.idle()
  t.equal(receiver.unverified.length, 1)
  t.equal(receiver.received.length, 0)
  t.equal(webhooks.failed, 1, 'a 401 is no delivery')
})

t.test('a failing receiver: retried 30 s later with the same webhook-id, then after the next delay', async (t) => {
  const receiver = await startWebhookReceiver(t)
  receiver.status = 500
  const { webhooks, clock } = await webhooksFor(t, receiver.url)
  await webhooks.emit('password.changed', { user_id: 3 })
  await webhooks.idle()
  t.equal(receiver.requests, 1)
  clock.advance(RETRY_DELAYS_MS[0] - 1)
  webhooks.wake()
  await webhooks.idle()
  t.equal(receiver.requests, 1, 'not before 30 s')
  clock.advance(1)
  webhooks.wake()
  await webhooks.idle()
  t.equal(receiver.requests, 2, 'the first retry at 30 s')
  receiver.status = 200
  clock.advance(RETRY_DELAYS_MS[1] - 1)
  webhooks.wake()
  await webhooks.idle()
  t.equal(receiver.requests, 2, 'the second waits longer')
  clock.advance(1)
  webhooks.wake()
  await webhooks.idle()
  t.equal(receiver.received.length, 1, 'delivered')
  t.equal(receiver.requests, 3)
  t.same(receiver.attemptIds, Array(3).fill(receiver.received[0].id), 'every attempt with the same webhook-id')
  clock.advance(RETRY_DELAYS_MS.at(-1) as number)
  webhooks.wake()
  await webhooks.idle()
  t.equal(receiver.requests, 3, 'and never again once delivered')
})

t.test('the backoff: 30 s, 2 min, 10 min, 30 min, then hourly', async (t) => {
  t.same([1, 2, 3, 4, 5, 6, 20].map(retryDelayMs), [30_000, 120_000, 600_000, 1_800_000, 3_600_000, 3_600_000, 3_600_000])
})

t.test('after WEBHOOK_MAX_ATTEMPTS the event is given up and logged', async (t) => {
  const receiver = await startWebhookReceiver(t)
  receiver.status = 503
  const { log, lines } = recordingLogger()
  const { webhooks, clock } = await webhooksFor(t, receiver.url, { maxAttempts: 3, log })
  await webhooks.emit('user.deleted', { id: 1 })
  for (let round = 0; round < 5; round++) {
    await webhooks.idle()
    clock.advance(RETRY_DELAYS_MS.at(-1) as number)
    webhooks.wake()
  }
  await webhooks.idle()
  t.equal(receiver.requests, 3, 'three attempts')
  t.equal(webhooks.failed, 1)
  t.equal(await webhooks.queued(), 0)
  t.match(lines.filter(line => line.level === 'error'), [{ message: /given up/, fields: { type: 'user.deleted', attempts: 3, error: 'HTTP 503' } }])
})

t.test('a receiver that does not answer within the timeout is a failed attempt, retried', async (t) => {
  const hanging = createServer(() => {})
  await new Promise<void>(resolve => hanging.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { hanging.closeAllConnections(); hanging.close() })
  const { log, lines } = recordingLogger()
  const { webhooks } = await webhooksFor(t, `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`, { log, timeoutMs: 200 })
  const started = Date.now()
  await webhooks.emit('session.revoked', { user_id: 1 })
  await webhooks.idle()
  t.ok(Date.now() - started < 2000, 'given up at the timeout')
  t.match(lines, [{ level: 'warn', message: /will be retried/ }])
  t.equal(await webhooks.queued(), 1, 'still waiting in the outbox')
})

t.test('without WEBHOOK_URL nothing is written', async (t) => {
  const { webhooks, securityEvents, store } = await webhooksFor(t, undefined)
  t.equal(webhooks.enabled, false)
  await webhooks.emit('user.created', { id: 1 })
  const user = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'x' })
  await securityEvents.record('login', CLIENT, { userId: user.id, sessionId: 's' })
  t.equal((await store.listSecurityEvents(user.id, { limit: 10 })).length, 1, 'the security event is stored, alone')
  t.equal(webhooks.userEvent('user.created'), undefined)
  t.equal(await store.countPendingWebhooks(), 0)
})

t.test('a store error while writing is logged, never thrown', async (t) => {
  const store = await testStore(t)
  const failing = Object.create(store) as AccountStore
  failing.enqueueWebhooks = async () => { throw new Error('disk full') }
  const { log, lines } = recordingLogger()
  const { webhooks } = await webhooksFor(t, 'http://127.0.0.1:9/', { store: failing, log })
  await t.resolves(webhooks.emit('user.created', { id: 1 }))
  t.match(lines, [{ level: 'error', message: 'webhook event not written to the outbox' }])
})

t.test('security events map to webhooks: sessions and passwords as { user_id, session_id? }, an email change as the user', async (t) => {
  const receiver = await startWebhookReceiver(t)
  const { webhooks, securityEvents, store } = await webhooksFor(t, receiver.url)
  const user = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'x' })
  // Recorded as the rules record them: the webhooks hear each event through their subscription.
  const fromSecurityEvent = async (type: SecurityEventType, subject: EventSubject) => { await securityEvents.record(type, CLIENT, subject) }
  await fromSecurityEvent('login', { userId: user.id, sessionId: 'family-1' })
  await fromSecurityEvent('passkey_login', { userId: user.id, sessionId: 'family-2' })
  await fromSecurityEvent('session_revoked', { userId: user.id, sessionId: null })
  await fromSecurityEvent('password_reset', { userId: user.id })
  await fromSecurityEvent('mfa_disabled', { userId: user.id, sessionId: 'family-2' })
  await fromSecurityEvent('email_changed', { userId: user.id, sessionId: 'family-3' })
  // Nothing for these.
  await fromSecurityEvent('login_failed', { userId: null })
  await fromSecurityEvent('mfa_failed', { userId: user.id })
  // Nor for a user that is gone.
  await fromSecurityEvent('email_changed', { userId: user.id + 1 })
  await webhooks.idle()
  const byType = receiver.received.map(({ type, data }) => ({ type, data })).sort((a, b) => a.type.localeCompare(b.type) || JSON.stringify(a.data).localeCompare(JSON.stringify(b.data)))
  t.same(byType, [
    { type: 'mfa.changed', data: { user_id: user.id, session_id: 'family-2' } },
    { type: 'password.changed', data: { user_id: user.id } },
    { type: 'session.created', data: { user_id: user.id, session_id: 'family-1' } },
    { type: 'session.created', data: { user_id: user.id, session_id: 'family-2' } },
    { type: 'session.revoked', data: { user_id: user.id } },
    { type: 'user.updated', data: { id: user.id, email: 'ada@example.com' } }
  ])
})

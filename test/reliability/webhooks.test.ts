import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { RETRY_DELAYS_MS } from '../../core/webhooks/webhook-sender.js'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { credentials, logIn, registerUser } from '../fixtures/factories.js'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { enableTotp } from '../fixtures/mfa.js'
import { startWebhookReceiver, WEBHOOK_SECRET, type WebhookReceiver } from '../fixtures/webhook-receiver.js'

/*
 * Webhooks through the whole service, received by a receiver that verifies each delivery with the
 * standardwebhooks package: what each action sends, and that a receiver outage and a restart of
 * the service lose nothing and deliver nothing twice.
 */

const VARIANT = 'header'

async function delivered (server: FastifyInstance): Promise<void> {
  server.webhooks.wake()
  await server.webhooks.idle()
}

function webhookEnv (receiver: WebhookReceiver, databaseUrl?: string): Record<string, string> {
  return { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET, ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }) }
}

t.test('registration, login, password change, TOTP and a profile change each send their event, signed', async (t) => {
  const receiver = await startWebhookReceiver(t)
  // The cookie variant: the one with PATCH /users/:id.
  const variant = 'cookie'
  const server = await build(t, { variant, env: webhookEnv(receiver) })

  const user = await registerUser(server, variant, { first_name: 'Grace', last_name: 'Hopper' })
  await delivered(server)
  const [created] = receiver.ofType('user.created')
  t.match(created?.data, { id: user.id, email: user.email, first_name: 'Grace', last_name: 'Hopper', username: user.body.username, email_verified: false, created_at: /^\d{4}-\d\d-\d\dT/ })
  t.notOk('password_hash' in (created?.data ?? {}) || 'passwordHash' in (created?.data ?? {}), 'never a hash')

  const session = await logIn(server, variant, user)
  await delivered(server)
  t.match(receiver.ofType('session.created'), [{ data: { user_id: user.id, session_id: /./ } }])

  const changed = await server.inject({
    method: 'POST',
    url: '/auth/change-password',
    ...credentials(variant, session),
    payload: { current_password: user.password, new_password: 'a wholly new password 1906' }
  })
  t.ok(changed.statusCode < 300, `password changed: ${changed.statusCode}`)
  await delivered(server)
  t.match(receiver.ofType('password.changed'), [{ data: { user_id: user.id } }])

  await enableTotp(server, variant, session)
  await delivered(server)
  t.match(receiver.ofType('mfa.changed'), [{ data: { user_id: user.id } }])

  const updated = await server.inject({ method: 'PATCH', url: `/users/${user.id}`, ...credentials(variant, session), payload: { first_name: 'Amazing Grace' } })
  t.equal(updated.statusCode, 204, updated.body)
  await delivered(server)
  t.match(receiver.ofType('user.updated'), [{ data: { id: user.id, first_name: 'Amazing Grace' } }])

  t.equal(receiver.unverified.length, 0, 'every delivery verifies')
  t.equal(new Set(receiver.received.map(delivery => delivery.id)).size, receiver.received.length, 'each webhook-id once')
})

t.test('without WEBHOOK_URL nothing is written', async (t) => {
  const server = await build(t, { variant: VARIANT })
  await registerUser(server, VARIANT)
  t.equal(server.webhooks.enabled, false)
  t.equal(await server.store.countPendingWebhooks(), 0)
})

t.test('a receiver outage and a service restart: every event arrives, none twice after its delivery', async (t) => {
  const receiver = await startWebhookReceiver(t)
  const clock = testClock()
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const env = webhookEnv(receiver, databaseUrl)

  // The receiver fails, then is down, while the first instance runs: requests go on, events wait in the outbox.
  receiver.status = 500
  const first = await build(t, { variant: VARIANT, env, clock })
  const users = []
  for (let n = 0; n < 3; n++) {
    const user = await registerUser(first, VARIANT)
    await logIn(first, VARIANT, user)
    users.push(user)
  }
  await first.webhooks.idle()
  t.ok(receiver.requests >= 6, 'each event tried once')
  t.equal(receiver.received.length, 0, 'none taken')
  await receiver.stop()
  const downRegistration = Date.now()
  const late = await registerUser(first, VARIANT)
  t.ok(Date.now() - downRegistration < 1000, 'a receiver that is down slows no request')
  users.push(late)
  clock.advance(RETRY_DELAYS_MS[0])
  await delivered(first)
  t.equal(await first.store.countPendingWebhooks(), 7, 'all seven wait')
  await first.close()

  // Back up; a new instance on the same database delivers what the first left, at its start and as retries fall due.
  await receiver.restart()
  receiver.status = 204
  const second = await build(t, { variant: VARIANT, env, clock })
  await second.webhooks.idle()
  clock.advance(RETRY_DELAYS_MS[1])
  await delivered(second)
  t.equal(await second.store.countPendingWebhooks(), 0, 'the outbox is empty')
  const ids = receiver.received.map(delivery => delivery.id)
  t.equal(ids.length, 7, 'seven deliveries')
  t.equal(new Set(ids).size, 7, 'none twice')
  t.same(receiver.ofType('user.created').map(delivery => delivery.data.id).sort(), users.map(user => user.id).sort(), 'every registration')
  t.same(receiver.ofType('session.created').map(delivery => delivery.data.user_id).sort(), users.slice(0, 3).map(user => user.id).sort(), 'every login')

  // Later rounds send nothing again.
  clock.advance(RETRY_DELAYS_MS.at(-1) as number)
  await delivered(second)
  t.equal(receiver.received.length, 7)
  t.equal(receiver.unverified.length, 0)
})

t.test('an admin\'s disable, enable and delete send user.disabled, user.enabled and user.deleted with the user as the admin API shows it', async (t) => {
  const receiver = await startWebhookReceiver(t)
  const server = await build(t, { variant: VARIANT, env: webhookEnv(receiver) })
  const admin = await adminSession(server, VARIANT)
  const user = await registerUser(server, VARIANT, { first_name: 'Mallory' })
  for (const [method, url] of [['POST', `/admin/users/${user.id}/disable`], ['POST', `/admin/users/${user.id}/enable`], ['DELETE', `/admin/users/${user.id}`]] as const) {
    const answer = await adminRequest(server, VARIANT, admin, method, url)
    t.equal(answer.statusCode, 204, `${method} ${url}: ${answer.body}`)
  }
  await delivered(server)
  t.match(receiver.ofType('user.disabled'), [{ data: { id: user.id, email: user.email, role: 'user', disabled: true } }])
  t.match(receiver.ofType('user.enabled'), [{ data: { id: user.id, disabled: false } }])
  t.match(receiver.ofType('user.deleted'), [{ data: { id: user.id, email: user.email } }])
  t.equal(receiver.unverified.length, 0)
})

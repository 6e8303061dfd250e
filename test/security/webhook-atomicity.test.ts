import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import t, { type Test } from 'tap'
import { build } from '../fixtures/build.js'
import { onPostgres, selectAll, testDatabaseUrl } from '../fixtures/database.js'
import { credentials, loggedInUser, newUserBody } from '../fixtures/factories.js'
import { WEBHOOK_SECRET } from '../fixtures/webhook-receiver.js'

/*
 * Issue 33, finding 15: a webhook row is written in the same transaction as the change it reports.
 * A store fault injected when the webhook row is written (a trigger on webhook_outbox that refuses
 * the insert, on either backend) must leave both or neither: a change that answered 2xx has its
 * webhook row, and a change whose webhook row was refused did not happen. A security event and the
 * webhook it sends are written together as well.
 */

const VARIANT = 'cookie'

/** Runs SQL straight on the service's database (the temporary SQLite file, or the test's PostgreSQL schema). */
async function execute (t: Test, databaseUrl: string, statement: string): Promise<void> {
  if (!onPostgres) {
    const raw = new Database(databaseUrl)
    try { raw.exec(statement) } finally { raw.close() }
    return
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try { await client.query(statement) } finally { await client.end() }
}

/** From now on every insert into the webhook outbox fails (a full disk, a lost connection at that statement). */
async function refuseWebhookRows (t: Test, databaseUrl: string): Promise<void> {
  await execute(t, databaseUrl, onPostgres
    ? `create function refuse_webhook() returns trigger language plpgsql as $$ begin raise exception 'injected fault'; end $$;
       create trigger refuse_webhook before insert on webhook_outbox for each row execute function refuse_webhook();`
    : 'CREATE TRIGGER refuse_webhook BEFORE INSERT ON webhook_outbox BEGIN SELECT RAISE(ABORT, \'injected fault\'); END;')
}

async function acceptWebhookRows (t: Test, databaseUrl: string): Promise<void> {
  await execute(t, databaseUrl, onPostgres
    ? 'drop trigger refuse_webhook on webhook_outbox; drop function refuse_webhook();'
    : 'DROP TRIGGER refuse_webhook;')
}

async function webhookRows (t: Test, databaseUrl: string, type: string): Promise<number> {
  const rows = await selectAll<{ type: string }>(t, databaseUrl, 'select type from webhook_outbox')
  return rows.filter(row => row.type === type).length
}

async function eventRows (t: Test, databaseUrl: string, type: string): Promise<number> {
  const rows = await selectAll<{ type: string }>(t, databaseUrl, 'select type from security_events')
  return rows.filter(row => row.type === type).length
}

async function service (t: Test): Promise<{ server: FastifyInstance, databaseUrl: string }> {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  // Nobody listens there: the rows stay in the outbox for the test to count.
  const server = await build(t, { variant: VARIANT, env: { DATABASE_URL: databaseUrl, WEBHOOK_URL: 'http://127.0.0.1:9/', WEBHOOK_SECRET } })
  return { server, databaseUrl }
}

t.test('a registration whose user.created row cannot be written leaves no account behind', async (t) => {
  const { server, databaseUrl } = await service(t)
  await refuseWebhookRows(t, databaseUrl)
  const body = newUserBody(VARIANT)
  const refused = await server.inject({ method: 'POST', url: '/auth/register', payload: body })
  t.ok(refused.statusCode >= 500, `the registration failed: ${refused.statusCode}`)
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: body.email, password: body.password } })
  t.equal(login.statusCode, 401, 'no account was made without its event')
  t.equal(await webhookRows(t, databaseUrl, 'user.created'), 0)

  await acceptWebhookRows(t, databaseUrl)
  const registered = await server.inject({ method: 'POST', url: '/auth/register', payload: body })
  t.equal(registered.statusCode, 201, 'the same address registers once the outbox takes rows again')
  t.equal(await webhookRows(t, databaseUrl, 'user.created'), 1, 'the answered registration has its event')
})

t.test('a profile change whose user.updated row cannot be written changes nothing', async (t) => {
  const { server, databaseUrl } = await service(t)
  const session = await loggedInUser(server, VARIANT)
  await refuseWebhookRows(t, databaseUrl)
  const refused = await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, ...credentials(VARIANT, session), payload: { first_name: 'Changed' } })
  t.ok(refused.statusCode >= 500, `the change failed: ${refused.statusCode}`)
  await acceptWebhookRows(t, databaseUrl)
  const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(VARIANT, session) })
  t.equal(read.json().first_name, session.user.body.first_name, 'the name is the old one')
  t.equal(await webhookRows(t, databaseUrl, 'user.updated'), 0)

  const changed = await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, ...credentials(VARIANT, session), payload: { first_name: 'Changed' } })
  t.equal(changed.statusCode, 204)
  t.equal(await webhookRows(t, databaseUrl, 'user.updated'), 1, 'the answered change has its event')
})

t.test('an account deletion whose user.deleted row cannot be written deletes nothing', async (t) => {
  const { server, databaseUrl } = await service(t)
  const session = await loggedInUser(server, VARIANT)
  await refuseWebhookRows(t, databaseUrl)
  const deleteAccount = () => server.inject({ method: 'DELETE', url: `/users/${session.user.id}`, ...credentials(VARIANT, session), payload: { password: session.user.password } })
  const refused = await deleteAccount()
  t.ok(refused.statusCode >= 500, `the deletion failed: ${refused.statusCode}`)
  await acceptWebhookRows(t, databaseUrl)
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })
  t.equal(login.statusCode, 200, 'the account is still there')
  t.equal(await webhookRows(t, databaseUrl, 'user.deleted'), 0)

  t.equal((await deleteAccount()).statusCode, 204)
  t.equal(await webhookRows(t, databaseUrl, 'user.deleted'), 1, 'the answered deletion has its event')
})

t.test('a security event and the webhook it sends are written together, or neither', async (t) => {
  const { server, databaseUrl } = await service(t)
  const session = await loggedInUser(server, VARIANT)
  t.equal(await eventRows(t, databaseUrl, 'login'), 1)
  t.equal(await webhookRows(t, databaseUrl, 'session.created'), 1, 'a login event sends session.created')

  await refuseWebhookRows(t, databaseUrl)
  await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })
  await acceptWebhookRows(t, databaseUrl)
  t.equal(await eventRows(t, databaseUrl, 'login'), await webhookRows(t, databaseUrl, 'session.created'),
    'as many login events as session.created rows: no event without its webhook')
})

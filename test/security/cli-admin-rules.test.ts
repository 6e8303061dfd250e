import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { runAdmin } from '../../src/admin.js'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { credentials, loggedInUser } from '../fixtures/factories.js'
import { startMailbox } from '../fixtures/mailbox.js'
import { enableTotp } from '../fixtures/mfa.js'
import { startWebhookReceiver, WEBHOOK_SECRET, type WebhookReceiver } from '../fixtures/webhook-receiver.js'

/*
 * Issue 33, finding 15: the CLI did not go through the admin rules. `users delete` wrote no audit row and
 * sent no webhook, `sessions revoke` wrote no audit row, and `mfa reset` recorded another event than the
 * admin API's (and mailed the owner nothing). Now each is the admin API's act with the operator as actor
 * (actor_id null): the same audit rows, webhooks and mail, which each test compares with the API's own act; the
 * export shows an event as GET /admin/events does. Run on SQLite and, with TEST_STORE=postgres, PostgreSQL
 * (scripts/test-postgres.mjs).
 */

interface Setup { server: FastifyInstance, receiver: WebhookReceiver, cli: (...args: string[]) => Promise<{ code: number, stdout: string, stderr: string }> }

async function setUp (t: Test, env: Record<string, string> = {}): Promise<Setup> {
  const receiver = await startWebhookReceiver(t)
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const settings = { DATABASE_URL: databaseUrl, WEBHOOK_URL: receiver.url, WEBHOOK_SECRET, ...env }
  const server = await build(t, { variant: 'header', env: settings })
  const cli = async (...args: string[]) => {
    const stdout: string[] = []
    const stderr: string[] = []
    const code = await runAdmin(args, { out: line => { stdout.push(line) }, err: line => { stderr.push(line) }, env: settings })
    return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') }
  }
  return { server, receiver, cli }
}

/** Every event the CLI's export gives, newest first. */
async function trail (cli: Setup['cli'], type: string): Promise<Array<Record<string, unknown>>> {
  const exported = await cli('events', 'export', '--type', type)
  return exported.stdout === '' ? [] : exported.stdout.split('\n').map(line => JSON.parse(line))
}

/** Webhooks the CLI wrote are delivered (by the CLI itself or, left in the outbox, by the service's worker). */
async function delivered (server: FastifyInstance, receiver: WebhookReceiver, type: string) {
  server.webhooks.wake()
  await server.webhooks.idle()
  return receiver.ofType(type)
}

/** What an audit row says apart from who acted and when: the same for the CLI's act as for the API's. */
function shapeOf (row: Record<string, unknown> | undefined) {
  return { type: row?.type, fields: Object.keys(row ?? {}).sort(), detail: Object.keys(row?.detail as object ?? {}).sort() }
}

t.test('users delete writes the admin API\'s audit row and sends user.deleted, as DELETE /admin/users/:id does', async (t) => {
  const { server, receiver, cli } = await setUp(t)
  const admin = await adminSession(server, 'header')
  const [byCli, byApi] = [await loggedInUser(server, 'header'), await loggedInUser(server, 'header')]
  const deleted = await cli('users', 'delete', String(byCli.user.id))
  t.equal(deleted.code, 0, deleted.stderr)
  t.equal(deleted.stderr, '')
  t.equal((await adminRequest(server, 'header', admin, 'DELETE', `/admin/users/${byApi.user.id}`)).statusCode, 204)

  const rows = await trail(cli, 'admin_user_deleted')
  const ofCli = rows.find(row => (row.detail as { user_id: number }).user_id === byCli.user.id)
  const ofApi = rows.find(row => (row.detail as { user_id: number }).user_id === byApi.user.id)
  t.match(ofCli, { type: 'admin_user_deleted', user_id: null, actor_id: null, user_agent: 'account-service CLI', detail: { user_id: byCli.user.id, email: byCli.user.email } })
  t.match(ofApi, { user_id: null, actor_id: admin.user.id, detail: { user_id: byApi.user.id, email: byApi.user.email } })
  t.same(shapeOf(ofCli), shapeOf(ofApi), 'the same row either way')
  const sent = await delivered(server, receiver, 'user.deleted')
  const [ofCliSent, ofApiSent] = [byCli, byApi].map(({ user }) => sent.find(delivery => delivery.data.id === user.id))
  t.match(ofCliSent?.data, { id: byCli.user.id, email: byCli.user.email })
  t.same(Object.keys(ofCliSent?.data ?? {}).sort(), Object.keys(ofApiSent?.data ?? {}).sort(), 'the same webhook either way')
  t.equal((await cli('users', 'delete', String(byCli.user.id))).code, 1, 'a second time: no such user')
})

t.test('sessions revoke writes admin_sessions_revoked and sends session.revoked, as DELETE /admin/users/:id/sessions does', async (t) => {
  const { server, receiver, cli } = await setUp(t)
  const admin = await adminSession(server, 'header')
  const [byCli, byApi] = [await loggedInUser(server, 'header'), await loggedInUser(server, 'header')]
  const revoked = await cli('sessions', 'revoke', byCli.user.email)
  t.equal(revoked.code, 0, revoked.stderr)
  t.match(revoked.stdout, /^revoked 1 session of user/)
  t.equal((await adminRequest(server, 'header', admin, 'DELETE', `/admin/users/${byApi.user.id}/sessions`)).statusCode, 204)

  const rows = await trail(cli, 'admin_sessions_revoked')
  const ofCli = rows.find(row => row.user_id === byCli.user.id)
  const ofApi = rows.find(row => row.user_id === byApi.user.id)
  t.match(ofCli, { user_id: byCli.user.id, actor_id: null, detail: { user_id: byCli.user.id, sessions: 1 } })
  t.match(ofApi, { user_id: byApi.user.id, actor_id: admin.user.id, detail: { user_id: byApi.user.id, sessions: 1 } })
  t.same(shapeOf(ofCli), shapeOf(ofApi), 'the same row either way')
  const sent = (await delivered(server, receiver, 'session.revoked')).map(delivery => delivery.data)
  const [ofCliSent, ofApiSent] = [byCli, byApi].map(({ user }) => sent.filter(data => data.user_id === user.id))
  t.equal(ofCliSent.length, 1, 'session.revoked for the CLI\'s act')
  t.same(ofCliSent.map(data => Object.keys(data).sort()), ofApiSent.map(data => Object.keys(data).sort()), 'the same webhook either way')
  const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', headers: { authorization: `Bearer ${byCli.accessToken}`, 'x-refresh-token': `Bearer ${byCli.refreshToken}` } })
  t.equal(refresh.statusCode, 401, 'the session is over')
})

t.test('events export writes each event as GET /admin/events shows it: the same fields, the same values', async (t) => {
  const { server, cli } = await setUp(t)
  const admin = await adminSession(server, 'header')
  const user = await loggedInUser(server, 'header')
  // An admin's act (actor, detail) and a user's own events (a session, a client address).
  t.equal((await adminRequest(server, 'header', admin, 'DELETE', `/admin/users/${user.user.id}/sessions`)).statusCode, 204)
  const page = await adminRequest(server, 'header', admin, 'GET', '/admin/events?limit=200')
  t.equal(page.statusCode, 200)
  const fromApi: Array<Record<string, unknown>> = page.json().events
  const exported = await cli('events', 'export')
  t.equal(exported.code, 0, exported.stderr)
  const fromCli = exported.stdout.split('\n').map(line => JSON.parse(line))
  t.ok(fromApi.some(event => event.type === 'admin_sessions_revoked') && fromApi.some(event => event.type === 'login'), 'an admin\'s act and a user\'s own event')
  t.same(fromCli, fromApi, 'every event, field for field, in the same order')
  t.same(exported.stdout.split('\n').map(line => Object.keys(JSON.parse(line))), fromApi.map(event => Object.keys(event)), 'the fields in the API\'s order')
})

t.test('mfa reset is the admin API\'s reset: admin_mfa_reset, mfa.changed, and a mail to the owner', async (t) => {
  const mailbox = await startMailbox(t)
  const { server, receiver, cli } = await setUp(t, { SMTP_URL: mailbox.smtpUrl })
  const admin = await adminSession(server, 'header')
  const [byCli, byApi] = [await loggedInUser(server, 'header'), await loggedInUser(server, 'header')]
  await enableTotp(server, 'header', byCli)
  await enableTotp(server, 'header', byApi)
  const mfaChangedBefore = (await delivered(server, receiver, 'mfa.changed')).length

  const reset = await cli('mfa', 'reset', byCli.user.email)
  t.equal(reset.code, 0, reset.stderr)
  t.equal((await adminRequest(server, 'header', admin, 'DELETE', `/admin/users/${byApi.user.id}/mfa`)).statusCode, 204)

  const rows = await trail(cli, 'admin_mfa_reset')
  const ofCli = rows.find(row => row.user_id === byCli.user.id)
  const ofApi = rows.find(row => row.user_id === byApi.user.id)
  t.match(ofCli, { actor_id: null, detail: { user_id: byCli.user.id, totp_was_on: true } })
  t.match(ofApi, { actor_id: admin.user.id, detail: { user_id: byApi.user.id, totp_was_on: true } })
  t.same(Object.keys(ofCli?.detail as object).sort(), Object.keys(ofApi?.detail as object).sort(), 'the same event either way')

  const changed = (await delivered(server, receiver, 'mfa.changed')).slice(mfaChangedBefore)
  t.same(changed.map(delivery => delivery.data.user_id).sort(), [byCli.user.id, byApi.user.id].sort(), 'mfa.changed for both')
  server.mailer.wake()
  const mail = await mailbox.next(byCli.user.email, 'An administrator turned off two-step sign-in')
  t.match(mail.text, /administrator turned off the authenticator app/)
})

t.test('users set-role writes role_changed and sends user.updated with the user as changed, in the change\'s transaction', async (t) => {
  const { server, receiver, cli } = await setUp(t)
  const { user } = await loggedInUser(server, 'header')
  const promoted = await cli('users', 'set-role', String(user.id), 'admin')
  t.equal(promoted.code, 0, promoted.stderr)
  t.match((await trail(cli, 'role_changed'))[0], { type: 'role_changed', user_id: user.id, actor_id: null, user_agent: 'account-service CLI', detail: { user_id: user.id, from: 'user', to: 'admin' } })
  const sent = await delivered(server, receiver, 'user.updated')
  t.match(sent.map(delivery => delivery.data), [{ id: user.id, email: user.email, role: 'admin' }])
  const again = await cli('users', 'set-role', String(user.id), 'admin')
  t.equal(again.code, 0)
  t.equal((await trail(cli, 'role_changed')).length, 1, 'the same role again records nothing')
  t.equal((await delivered(server, receiver, 'user.updated')).length, 1, 'and sends nothing')
})

t.test('users import writes users_imported, as POST /admin/users/import does', async (t) => {
  const { server, cli } = await setUp(t)
  const admin = await adminSession(server, 'header')
  const folder = mkdtempSync(join(tmpdir(), 'account-import-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  const path = join(folder, 'users.ndjson')
  writeFileSync(path, [JSON.stringify({ email: 'cli@example.com', first_name: 'C', last_name: 'L' }), 'not json'].join('\n'))
  const imported = await cli('users', 'import', path)
  t.equal(imported.code, 0, imported.stderr)
  const session = credentials('header', admin)
  const byApi = await server.inject({
    method: 'POST',
    url: '/admin/users/import',
    payload: JSON.stringify({ email: 'api@example.com', first_name: 'A', last_name: 'P' }),
    ...session,
    headers: { ...session.headers, 'content-type': 'application/x-ndjson' }
  })
  t.equal(byApi.statusCode, 200, byApi.body)

  const rows = await trail(cli, 'users_imported')
  const ofCli = rows.find(row => row.actor_id === null)
  const ofApi = rows.find(row => row.actor_id === admin.user.id)
  t.match(ofCli, { type: 'users_imported', user_id: null, user_agent: 'account-service CLI', detail: { format: 'ndjson', imported: 1, skipped: 1, skipped_lines: [{ line: 2, reason: 'invalid JSON' }] } })
  t.same(shapeOf(ofCli), shapeOf(ofApi), 'the same row either way')
})

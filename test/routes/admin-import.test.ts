import { Readable } from 'node:stream'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import clock from '../../plugins/app/clock.js'
import userImport from '../../plugins/app/user-import.js'
import importRoutes, { type ImportRoutesOptions } from '../../routes/admin/import.js'
import { testClock } from '../fixtures/clock.js'
import { testStore } from '../fixtures/database.js'
import { bcryptHash, scryptHash } from '../fixtures/foreign-hashes.js'

/*
 * The route plugin in a bare instance, under /admin as the admin API registers it (its guards are the admin
 * API's, tested there): the store fixture, the clock and the import service, nothing else.
 */
async function importApp (t: Test, options: ImportRoutesOptions = {}) {
  const store = await testStore(t)
  const app = Fastify()
  await app.register(clock, { clock: testClock() })
  await app.register(fp(async (fastify) => { fastify.decorate('store', store) }, { name: 'store' }))
  await app.register(userImport, { batchSize: 2 })
  await app.register(importRoutes, { prefix: '/admin', ...options })
  t.teardown(() => app.close())
  return { app, store }
}

const user = (email: string, fields: Record<string, unknown> = {}) => ({ email, first_name: 'Ada', last_name: 'Lovelace', ...fields })
const ndjson = (...lines: unknown[]) => lines.map(line => typeof line === 'string' ? line : JSON.stringify(line)).join('\n')

t.test('NDJSON: 200 with what was imported and each line skipped', async (t) => {
  const { app, store } = await importApp(t)
  const response = await app.inject({
    method: 'POST',
    url: '/admin/users/import',
    headers: { 'content-type': 'application/x-ndjson; charset=utf-8' },
    payload: ndjson(user('a@example.com', { password_hash: bcryptHash('pw') }), '{', user('b@example.com', { password_hash: scryptHash('pw', { ln: 10 }) }),
      user('A@example.com'), user('c@example.com', { username: 'cee', email_verified: true }))
  })
  t.equal(response.statusCode, 200, response.body)
  t.same(response.json(), { imported: 3, skipped: [{ line: 2, reason: 'invalid JSON' }, { line: 4, reason: 'email already registered' }], skipped_count: 2, skipped_truncated: false })
  t.match(await store.findUserByEmail('c@example.com'), { username: 'cee', emailVerified: true })
})

t.test('NDJSON is read as a stream, chunk by chunk', async (t) => {
  const { app, store } = await importApp(t)
  const lines = Array.from({ length: 25 }, (_, index) => JSON.stringify(user(`user${index}@example.com`)) + '\n')
  const response = await app.inject({
    method: 'POST', url: '/admin/users/import', headers: { 'content-type': 'application/x-ndjson' }, payload: Readable.from(lines.map(line => Buffer.from(line)))
  })
  t.same(response.json(), { imported: 25, skipped: [], skipped_count: 0, skipped_truncated: false })
  t.equal((await store.listUsers({ limit: 100 })).length, 25)
})

t.test('a JSON array: 200 with positions from 1; a JSON object is refused', async (t) => {
  const { app } = await importApp(t)
  const response = await app.inject({ method: 'POST', url: '/admin/users/import', payload: [user('a@example.com'), user('b@example.com', { role: 'admin' })] })
  t.equal(response.statusCode, 200, response.body)
  t.same(response.json(), { imported: 1, skipped: [{ line: 2, reason: 'unknown field role' }], skipped_count: 1, skipped_truncated: false })
  const object = await app.inject({ method: 'POST', url: '/admin/users/import', payload: { users: [] } })
  t.equal(object.statusCode, 400)
  t.match(object.json(), { code: 'VALIDATION_FAILED' })
})

t.test('bodies over the limits: 413, an NDJSON one by its Content-Length before a line is read, or when its bytes pass the limit', async (t) => {
  const { app, store } = await importApp(t, { ndjsonLimit: 400, jsonLimit: 300 })
  const body = ndjson(...Array.from({ length: 8 }, (_, index) => user(`user${index}@example.com`)))
  t.ok(body.length > 400)
  const declared = await app.inject({ method: 'POST', url: '/admin/users/import', headers: { 'content-type': 'application/x-ndjson' }, payload: body })
  t.equal(declared.statusCode, 413)
  t.match(declared.json(), { code: 'PAYLOAD_TOO_LARGE' })
  t.equal((await store.listUsers({ limit: 100 })).length, 0, 'nothing imported')
  const streamed = await app.inject({
    method: 'POST', url: '/admin/users/import', headers: { 'content-type': 'application/x-ndjson' }, payload: Readable.from([...body].map(character => Buffer.from(character)))
  })
  t.equal(streamed.statusCode, 413)
  const array = await app.inject({ method: 'POST', url: '/admin/users/import', payload: Array.from({ length: 8 }, (_, index) => user(`user${index}@example.com`)) })
  t.equal(array.statusCode, 413)
})

t.test('another content type: 415', async (t) => {
  const { app } = await importApp(t)
  const response = await app.inject({ method: 'POST', url: '/admin/users/import', headers: { 'content-type': 'text/csv' }, payload: 'email\na@example.com' })
  t.equal(response.statusCode, 415)
})

import Database from 'better-sqlite3'
import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { adminPool, onPostgres, postgresSchema } from '../fixtures/database.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

t.test('GET /health is 200 while the process serves', async (t) => {
  const server = await build(t)
  const response = await server.inject('/health')
  t.equal(response.statusCode, 200)
  t.same(response.json(), { status: 'ok' })
})

t.test('GET /ready is 200 when the store answers with its migrations applied', async (t) => {
  const server = await build(t)
  const response = await server.inject('/ready')
  t.equal(response.statusCode, 200)
  t.same(response.json(), { status: 'ready' })
})

t.test('GET /ready is 503 in the error shape once the store is closed, while /health stays 200', async (t) => {
  const server = await build(t)
  await server.store.close()
  const response = await server.inject('/ready')
  assertError(t, response, 503, 'STORE_UNAVAILABLE')
  t.equal(response.headers['retry-after'], '1')
  t.equal((await server.inject('/health')).statusCode, 200)
})

t.test('GET /ready is 503 when the database lacks a migration this build ships', async (t) => {
  const { schema, databaseUrl } = onPostgres ? await postgresSchema(t) : { schema: undefined, databaseUrl: temporaryDatabase(t) }
  const server = await build(t, { env: { DATABASE_URL: databaseUrl } })
  t.equal((await server.inject('/ready')).statusCode, 200)
  // As if the database had been restored from a backup older than the newest migration.
  const forgetNewest = 'DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)'
  if (schema === undefined) {
    const other = new Database(databaseUrl)
    other.prepare(forgetNewest).run()
    other.close()
  } else {
    await adminPool().query(forgetNewest.replaceAll('__drizzle_migrations', `"${schema}".__drizzle_migrations`))
  }
  assertError(t, await server.inject('/ready'), 503, 'STORE_UNAVAILABLE')
})

t.test('every answer carries its request id in X-Request-Id', async (t) => {
  const server = await build(t)
  const generated = await server.inject('/health')
  t.match(generated.headers['x-request-id'], /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  const other = await server.inject('/health')
  t.not(other.headers['x-request-id'], generated.headers['x-request-id'], 'a new id per request')
  const given = await server.inject({ url: '/health', headers: { 'x-request-id': 'proxy-7f3a.1' } })
  t.equal(given.headers['x-request-id'], 'proxy-7f3a.1', "a proxy's id is kept")
  const odd = await server.inject({ url: '/health', headers: { 'x-request-id': 'no spaces\tor tabs' } })
  t.match(odd.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'an odd id is replaced, not echoed')
  const notFound = await server.inject('/nowhere')
  t.ok(notFound.headers['x-request-id'], 'errors carry it too')
})

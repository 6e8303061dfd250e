import { readFileSync } from 'node:fs'
import t from 'tap'
import { openStore } from '../../db/open.js'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { POSTGRES_SKIP_MESSAGE, TEST_DATABASE_URL, adminPool, onPostgres, postgresSchema } from '../fixtures/database.js'
import { newUserBody, registerUser } from '../fixtures/factories.js'
import { runNode, SERVER_ENTRY } from '../fixtures/process.js'
import { tcpProxy } from '../fixtures/tcp-proxy.js'

// These need a server; they run in the PostgreSQL pass of npm test.
const skip = TEST_DATABASE_URL === undefined ? POSTGRES_SKIP_MESSAGE : !onPostgres && 'runs in the PostgreSQL pass'

const MIGRATIONS = JSON.parse(readFileSync(new URL('../../db/postgres/migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] }

const CLOSED_PORT_URL = 'postgres://postgres@127.0.0.1:1/accounts'

const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })

t.test('a database unreachable at start: the start fails with one line naming it', async (t) => {
  await t.rejects(openStore(CLOSED_PORT_URL), /^cannot open the PostgreSQL store at postgres:\/\/127\.0\.0\.1:1\/accounts: .*ECONNREFUSED/)
  const result = await runNode([SERVER_ENTRY], { PATH: process.env.PATH, NODE_ENV: 'production', PORT: '0', DATABASE_URL: CLOSED_PORT_URL })
  t.equal(result.signal, null, 'the start ended by itself, within 15 s')
  t.equal(result.status, 1)
  const lines = result.stdout.trim().split('\n')
  t.equal(lines.length, 1, 'one log line')
  t.match(JSON.parse(lines[0]), { level: 60, msg: /^start failed: cannot open the PostgreSQL store at postgres:\/\/127\.0\.0\.1:1\/accounts: / })
})

t.test('instances starting together migrate once and keep one signing key', { skip }, async (t) => {
  const { schema, databaseUrl } = await postgresSchema(t)
  const stores = await Promise.all([openStore(databaseUrl), openStore(databaseUrl), openStore(databaseUrl)])
  t.teardown(() => Promise.all(stores.map(store => store.close())))
  const migrations = await adminPool().query(`select count(*)::int as applied from "${schema}".__drizzle_migrations`)
  t.equal(migrations.rows[0].applied, MIGRATIONS.entries.length, 'each migration applied once')

  const key = (kid: string) => ({ kid, algorithm: 'EdDSA' as const, publicKeyPem: 'public', privateKeyPem: 'private', createdAt: new Date() })
  await Promise.all(stores.map((store, index) => store.addSigningKey(key(`k${index}`), { onlyIfNoneOf: ['EdDSA', 'ES256'] })))
  t.equal((await stores[0].listSigningKeys()).length, 1, 'the first key stored is the only one')
})

t.test('usernames are unique ignoring case, through the unique index on lower(username)', { skip }, async (t) => {
  const { schema, databaseUrl } = await postgresSchema(t)
  const store = await openStore(databaseUrl)
  t.teardown(() => store.close())
  await store.createUser({ ...newUser('a@example.com'), username: 'Ada' })
  await t.rejects(store.createUser({ ...newUser('b@example.com'), username: 'aDA' }), { name: 'DuplicateValueError', field: 'username' })
  const index = await adminPool().query('select indexdef from pg_indexes where schemaname = $1 and indexname = $2', [schema, 'users_username_lower_unique'])
  t.match(index.rows[0]?.indexdef, /UNIQUE INDEX .* \(lower\(username\)\)/)
})

t.test('the database goes away: 503 in the error shape, the process serves on, and recovers when it returns', { skip }, async (t) => {
  const { databaseUrl } = await postgresSchema(t)
  const target = new URL(databaseUrl)
  const proxy = await tcpProxy(t, { host: target.hostname, port: Number(target.port || 5432) })
  const throughProxy = new URL(databaseUrl)
  throughProxy.host = `127.0.0.1:${proxy.port}`
  const server = await build(t, { variant: 'cookie', env: { DATABASE_URL: throughProxy.toString() } })
  const user = await registerUser(server, 'cookie')

  await proxy.stop()
  const register = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie') })
  assertError(t, register, 503, 'STORE_UNAVAILABLE')
  t.equal(register.headers['retry-after'], '1')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } }), 503, 'STORE_UNAVAILABLE')
  t.equal((await server.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'the process is up')

  await proxy.start()
  t.equal((await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie') })).statusCode, 201)
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200)
})

t.test('connections terminated by the server (pg_terminate_backend): at worst 503, then served again', { skip }, async (t) => {
  const { schema, databaseUrl } = await postgresSchema(t)
  const server = await build(t, { variant: 'cookie', env: { DATABASE_URL: databaseUrl } })
  const user = await registerUser(server, 'cookie')
  const terminated = await adminPool().query('select count(pg_terminate_backend(pid))::int as killed from pg_stat_activity where application_name = $1', [schema])
  t.ok(terminated.rows[0].killed >= 1, 'the service\'s connections were cut')

  const statuses = []
  for (let attempt = 0; attempt < 3; attempt++) {
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
    statuses.push(login.statusCode)
    if (login.statusCode === 200) break
    assertError(t, login, 503, 'STORE_UNAVAILABLE')
  }
  t.equal(statuses.at(-1), 200, `served again (statuses: ${statuses.join(', ')})`)
})

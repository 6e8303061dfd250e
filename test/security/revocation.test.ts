import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import t, { type Test } from 'tap'
import { build } from '../fixtures/build.js'
import { onPostgres, testDatabaseUrl } from '../fixtures/database.js'
import { loggedInUser, type Session } from '../fixtures/factories.js'
import { storeCallsDuring } from '../fixtures/store-calls.js'

const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url))

const readUser = async (server: FastifyInstance, session: Session) => await server.inject({
  method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}` }
})

/** Polls until the GET is refused; resolves with the status and how long it took. */
async function refusedWithin (server: FastifyInstance, session: Session, limitMs: number): Promise<{ status: number, elapsedMs: number }> {
  const started = Date.now()
  for (;;) {
    const { statusCode } = await readUser(server, session)
    const elapsedMs = Date.now() - started
    if (statusCode !== 200 || elapsedMs > limitMs) return { status: statusCode, elapsedMs }
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

t.test('a guarded GET runs no store statement for the guard: only the route\'s own read of the user', async (t) => {
  const server = await build(t, { variant: 'header' })
  const session = await loggedInUser(server, 'header')
  const calls = await storeCallsDuring(t, async () => {
    t.equal((await readUser(server, session)).statusCode, 200)
  })
  t.same(calls, ['findUserById'])
})

t.test('a logged-out session\'s access token is refused at once, and so are those of every revoking path', async (t) => {
  const server = await build(t, { variant: 'header' })
  const session = await loggedInUser(server, 'header')
  const headers = { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
  t.equal((await server.inject({ method: 'POST', url: '/auth/logout', headers })).statusCode, 204)
  const refused = await readUser(server, session)
  t.equal(refused.statusCode, 401)
  t.equal(refused.json().code, 'SESSION_REVOKED')

  const deleted = await loggedInUser(server, 'header')
  const other = await loggedInUser(server, 'header')
  const remove = await server.inject({
    method: 'DELETE', url: `/users/${deleted.user.id}`, headers: { authorization: `Bearer ${deleted.accessToken}` }, payload: { password: deleted.user.password }
  })
  t.equal(remove.statusCode, 204)
  t.equal((await readUser(server, deleted)).json().code, 'USER_NOT_FOUND', 'a deleted user\'s token: 404')
  t.equal((await readUser(server, other)).statusCode, 200, 'another user\'s session lives on')
})

t.test('within 1 s after `account-service sessions revoke` from another process', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, 'header')
  const cli = spawnSync(process.execPath, [CLI, 'sessions', 'revoke', session.user.email], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl }, encoding: 'utf8', timeout: 15_000
  })
  t.equal(cli.status, 0, cli.stderr)
  const { status, elapsedMs } = await refusedWithin(server, session, 1000)
  t.equal(status, 401, `refused after ${elapsedMs} ms`)
})

t.test('within 1 s after a logout on another instance over the same database; a restart rebuilds the set from the log', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const one = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl } })
  const two = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(one, 'header')
  t.equal((await readUser(two, session)).statusCode, 200)
  const headers = { 'x-refresh-token': `Bearer ${session.refreshToken}` }
  t.equal((await one.inject({ method: 'POST', url: '/auth/logout', headers })).statusCode, 204)
  const { status, elapsedMs } = await refusedWithin(two, session, 1000)
  t.equal(status, 401, `refused by the other instance after ${elapsedMs} ms`)

  await two.close()
  const restarted = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl } })
  const calls = await storeCallsDuring(t, async () => {
    const refused = await readUser(restarted, session)
    t.equal(refused.statusCode, 401)
    t.equal(refused.json().code, 'SESSION_REVOKED')
  })
  t.same(calls, [], 'refused from the set rebuilt at start, without asking the store')
})

t.test('an instance that cannot read the log falls back to the store and still refuses a revoked token', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, 'header')
  // The log vanishes (as if its reads failed), and a revocation happens that it never tells of.
  await execute(t, databaseUrl, 'alter table revocations rename to revocations_gone')
  await execute(t, databaseUrl, 'update refresh_tokens set revoked_at = 1 where revoked_at is null')
  const { status, elapsedMs } = await refusedWithin(server, session, 1500)
  t.equal(status, 401, `refused after ${elapsedMs} ms`)
  t.notOk(server.revocations.isFresh())
})

/** A statement run beside the service, straight on its database. */
async function execute (t: Test, databaseUrl: string, statement: string): Promise<void> {
  if (!onPostgres) {
    const connection = new Database(databaseUrl)
    t.teardown(() => connection.close())
    connection.exec(statement)
    return
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    // On PostgreSQL revoked_at is a timestamp.
    await client.query(statement.replace('revoked_at = 1', 'revoked_at = now()'))
  } finally {
    await client.end()
  }
}

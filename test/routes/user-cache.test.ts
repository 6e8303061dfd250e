import t from 'tap'
import { openStore } from '../../db/open.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { eventually } from '../fixtures/eventually.js'
import { loggedInUser, logIn } from '../fixtures/factories.js'

// GET /users/:id answers from the user cache (core/users/user-cache.ts), kept exact through the
// revocation log: at once on the instance that made a change, within the log's poll on the others,
// and for a change no instance made (another process writing the database). Two instances over one
// store: a shared SQLite file, and in the PostgreSQL pass a shared schema.

t.test('a user read before is answered without the store, and a change shows at once here and within the poll elsewhere', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const [first, second] = [await build(t, { env: { DATABASE_URL: databaseUrl } }), await build(t, { env: { DATABASE_URL: databaseUrl } })]
  const session = await loggedInUser(first, 'cookie', { first_name: 'Ada' })
  const atSecond = await logIn(second, 'cookie', session.user)
  const read = async (server: typeof first, accessToken: string) => {
    const answer = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, cookies: { accessToken } })
    t.equal(answer.statusCode, 200)
    return answer.json() as { first_name: string, last_name: string, email: string }
  }
  t.equal((await read(second, atSecond.accessToken)).first_name, 'Ada')

  const reads = { count: 0 }
  for (const server of [first, second]) {
    const findUserById = server.store.findUserById.bind(server.store)
    server.store.findUserById = async (id) => { reads.count++; return await findUserById(id) }
  }
  t.equal((await read(second, atSecond.accessToken)).first_name, 'Ada')
  t.equal(reads.count, 0, 'a user read before: no store read')

  const patch = await first.inject({ method: 'PATCH', url: `/users/${session.user.id}`, cookies: { accessToken: session.accessToken }, payload: { first_name: 'Augusta' } })
  t.equal(patch.statusCode, 204)
  t.equal((await read(first, session.accessToken)).first_name, 'Augusta', 'the instance that changed it shows the change at once')
  t.ok(await eventually(async () => (await read(second, atSecond.accessToken)).first_name === 'Augusta'), 'the other shows it within the poll')

  // Another process changes the user (an operator's script, the CLI): the database logs it all the same.
  const elsewhere = await openStore(databaseUrl)
  t.teardown(() => elsewhere.close())
  await elsewhere.updateUser(session.user.id, { lastName: 'King' })
  for (const [server, token] of [[first, session.accessToken], [second, atSecond.accessToken]] as const) {
    t.ok(await eventually(async () => (await read(server, token)).last_name === 'King'), 'a change made by no instance shows on each within the poll')
  }

  await elsewhere.deleteUser(session.user.id)
  for (const [server, token] of [[first, session.accessToken], [second, atSecond.accessToken]] as const) {
    t.ok(await eventually(async () => (await server.inject({ method: 'GET', url: `/users/${session.user.id}`, cookies: { accessToken: token } })).statusCode === 404), 'deleted elsewhere: 404 on each')
  }
})

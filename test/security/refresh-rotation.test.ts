import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { cookieValue, loggedInUser } from '../fixtures/factories.js'
import { onPostgres, selectAll, testDatabaseUrl } from '../fixtures/database.js'

const variant = 'cookie'

t.test('50 parallel refreshes with one token leave exactly one live session family with exactly one live refresh token', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant, env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, variant)
  const responses = await Promise.all(Array.from({ length: 50 }, () =>
    server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })))
  t.same(responses.map(response => response.statusCode), Array(50).fill(200), 'every tab gets an access token')

  // Straight on the tables, as an operator would count them (PostgreSQL's count is a bigint, read as a string).
  const userId = Number(session.user.id)
  const now = onPostgres ? 'now()' : String(Date.now())
  const count = async (query: string) => Number((await selectAll<{ n: number | string }>(t, databaseUrl, query))[0].n)
  t.equal(await count(`SELECT COUNT(DISTINCT family_id) AS n FROM refresh_tokens WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > ${now}`), 1, 'one live session family')
  t.equal(await count(`SELECT COUNT(*) AS n FROM refresh_tokens WHERE user_id = ${userId} AND rotated_at IS NULL AND revoked_at IS NULL`), 1, 'one live (unrotated, unrevoked) refresh token in it')
  t.equal(await count(`SELECT COUNT(DISTINCT family_id) AS n FROM refresh_tokens WHERE user_id = ${userId}`), 1, 'no second family was ever started')
})

t.test('a stolen refresh token replayed after its rotation revokes the whole session, the thief\'s and the owner\'s copy alike', async (t) => {
  const server = await build(t, { variant, env: { REFRESH_REUSE_GRACE: '0' } })
  const session = await loggedInUser(server, variant)
  const rotated = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  t.equal(rotated.statusCode, 200)
  const ownersToken = cookieValue(rotated, 'refreshToken')

  const replay = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  assertError(t, replay, 401, 'REFRESH_TOKEN_REUSED')
  const owner = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: ownersToken } })
  assertError(t, owner, 401, 'INVALID_REFRESH_TOKEN')
})

t.test('within the reuse grace a rotated token gets an access token but no second live refresh token', async (t) => {
  const server = await build(t, { variant, env: { REFRESH_REUSE_GRACE: '5s' } })
  const session = await loggedInUser(server, variant)
  const first = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  const second = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  t.equal(first.statusCode, 200)
  t.equal(second.statusCode, 200)
  t.notOk((second.cookies as Array<{ name: string }>).some(cookie => cookie.name === 'refreshToken'), 'no new refresh cookie')
  const successor = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: cookieValue(first, 'refreshToken') } })
  t.equal(successor.statusCode, 200, 'the session goes on')
})

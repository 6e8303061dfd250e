import Database from 'better-sqlite3'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { cookieValue, loggedInUser } from '../fixtures/factories.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

const variant = 'cookie'

t.test('50 parallel refreshes with one token leave exactly one live session family with exactly one live refresh token', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { variant, env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, variant)
  const responses = await Promise.all(Array.from({ length: 50 }, () =>
    server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })))
  t.same(responses.map(response => response.statusCode), Array(50).fill(200), 'every tab gets an access token')

  const db = new Database(databaseUrl, { readonly: true })
  t.teardown(() => db.close())
  const liveFamilies = db.prepare('SELECT COUNT(DISTINCT family_id) AS n FROM refresh_tokens WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?')
    .get(session.user.id, Date.now()) as { n: number }
  t.equal(liveFamilies.n, 1, 'one live session family')
  const liveTokens = db.prepare('SELECT token_hash FROM refresh_tokens WHERE user_id = ? AND rotated_at IS NULL AND revoked_at IS NULL')
    .all(session.user.id)
  t.equal(liveTokens.length, 1, 'one live (unrotated, unrevoked) refresh token in it')
  const families = db.prepare('SELECT COUNT(DISTINCT family_id) AS n FROM refresh_tokens WHERE user_id = ?').get(session.user.id) as { n: number }
  t.equal(families.n, 1, 'no second family was ever started')
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

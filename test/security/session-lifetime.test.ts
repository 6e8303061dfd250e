import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { cookieValue, loggedInUser } from '../fixtures/factories.js'

/*
 * Finding 6 of the review: each rotation renewed the refresh token's expiry,
 * so a session refreshed often enough lived forever. SESSION_MAX_AGE now bounds
 * a session from its login, however often it rotates.
 */

const maxAgeOf = (response: { cookies: unknown }) =>
  (response.cookies as Array<{ name: string, maxAge?: number }>).find(cookie => cookie.name === 'refreshToken')?.maxAge

t.test('no refresh succeeds after login + SESSION_MAX_AGE, however often the session rotated', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant: 'cookie', env: { SESSION_MAX_AGE: '3s', REFRESH_TOKEN_TTL: '30d' }, clock })
  const session = await loggedInUser(server, 'cookie')
  t.ok((maxAgeOf(session.response) ?? Infinity) <= 3, 'the login\'s refresh cookie lives no longer than the session')

  let refreshToken = session.refreshToken
  for (let elapsed = 0; elapsed < 2000; elapsed += 400) {
    const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken } })
    t.equal(refresh.statusCode, 200, 'rotates while the session is young')
    refreshToken = cookieValue(refresh, 'refreshToken')
    t.ok((maxAgeOf(refresh) ?? Infinity) <= 3, `a rotated cookie's Max-Age (${maxAgeOf(refresh)}) does not point past the session's end`)
    clock.advance(400)
  }
  const record = await server.store.findRefreshToken((await import('../../core/tokens/random-token.js')).hashToken(refreshToken))
  t.ok(record !== undefined && record.expiresAt.getTime() <= (record.sessionStartedAt?.getTime() ?? 0) + 3000, 'nor does the stored expiry')

  clock.advance(1200)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken } }), 401, 'INVALID_REFRESH_TOKEN')
})

t.test('the header variant, which never rotates, ends at SESSION_MAX_AGE too', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant: 'header', env: { SESSION_MAX_AGE: '1s', REFRESH_TOKEN_TTL: '30d' }, clock })
  const session = await loggedInUser(server, 'header')
  const refresh = () => server.inject({
    method: 'POST',
    url: '/auth/refresh-token',
    headers: { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
  })
  t.equal((await refresh()).statusCode, 200)
  clock.advance(1100)
  const refused = await refresh()
  t.equal(refused.statusCode, 401)
})

import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { credentials, loggedInUser } from '../fixtures/factories.js'

t.test('a user deleted while its access token lives is 404 USER_NOT_FOUND, and its refresh token dies with it', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  const session = await loggedInUser(server, 'cookie')
  t.equal(await server.store.deleteUser(session.user.id), true)

  const url = `/users/${session.user.id}`
  assertError(t, await server.inject({ method: 'GET', url, ...credentials('cookie', session) }), 404, 'USER_NOT_FOUND')
  assertError(t, await server.inject({ method: 'PATCH', url, ...credentials('cookie', session), payload: { first_name: 'Ghost' } }), 404, 'USER_NOT_FOUND')
  const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  assertError(t, refresh, 401, 'INVALID_REFRESH_TOKEN')
})

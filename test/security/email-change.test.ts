import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { cookieValue, credentials, logIn, loggedInUser } from '../fixtures/factories.js'

const variant = 'cookie'

t.test('an email change ends every session, the current one\'s refresh token included, and hands the changer a new session', async (t) => {
  const server = await build(t, { variant })
  const current = await loggedInUser(server, variant)
  const other = await logIn(server, variant, current.user)

  const change = await server.inject({
    method: 'PATCH',
    url: `/users/${current.user.id}`,
    ...credentials(variant, current),
    payload: { email: 'new-address@example.com' }
  })
  t.equal(change.statusCode, 204)
  t.equal(change.body, '')
  const fresh = { accessToken: cookieValue(change, 'accessToken'), refreshToken: cookieValue(change, 'refreshToken') }

  assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, other) }), 401, 'INVALID_REFRESH_TOKEN')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, current) }), 401, 'INVALID_REFRESH_TOKEN')

  const read = await server.inject({ method: 'GET', url: `/users/${current.user.id}`, cookies: { accessToken: fresh.accessToken } })
  t.equal(read.json().email, 'new-address@example.com', 'the changer stays logged in')
  const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: fresh.refreshToken } })
  t.equal(refresh.statusCode, 200, 'in a new session')
})

t.test('a change that leaves the email as it was ends no session', async (t) => {
  const server = await build(t, { variant })
  const current = await loggedInUser(server, variant)
  const other = await logIn(server, variant, current.user)
  for (const payload of [{ first_name: 'Augusta' }, { email: current.user.email.toUpperCase() }]) {
    const change = await server.inject({ method: 'PATCH', url: `/users/${current.user.id}`, ...credentials(variant, current), payload })
    t.equal(change.statusCode, 204)
    t.same(change.cookies, [], 'no new cookies')
  }
  for (const session of [current, other]) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) })).statusCode, 200)
  }
})

import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { loggedInUser, newUserBody } from '../fixtures/factories.js'

// PostgreSQL's text holds no NUL character: input with one is refused as invalid on both backends, never a 500.
t.test('a NUL character in a name, a login email or a session id is refused with 400 on either backend', async (t) => {
  const server = await build(t)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie', { first_name: 'Ada\u0000' }) }), 400, 'VALIDATION_FAILED')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'ada\u0000@example.com', password: 'long enough pw' } }), 400, 'VALIDATION_FAILED')
  const session = await loggedInUser(server, 'cookie')
  assertError(t, await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, cookies: { accessToken: session.accessToken }, payload: { last_name: '\u0000' } }), 400, 'VALIDATION_FAILED')
  assertError(t, await server.inject({ method: 'DELETE', url: '/auth/sessions/a%00b', cookies: { accessToken: session.accessToken } }), 400, 'VALIDATION_FAILED')
})

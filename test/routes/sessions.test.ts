import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { credentials, logIn, loggedInUser } from '../fixtures/factories.js'
import { sessionIdOf } from '../fixtures/mailbox.js'

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: GET /auth/sessions and DELETE /auth/sessions/:sessionId`, async (t) => {
    t.test('lists the live sessions with the current one marked', async (t) => {
      const server = await build(t, { variant })
      const first = await loggedInUser(server, variant)
      const laptop = await server.inject({
        method: 'POST',
        url: '/auth/login',
        headers: { 'user-agent': 'Laptop Browser/1.0' },
        payload: { email: first.user.email, password: first.user.password }
      })
      t.equal(laptop.statusCode, 200)
      await loggedInUser(server, variant) // someone else's session is not listed

      const response = await server.inject({ method: 'GET', url: '/auth/sessions', ...credentials(variant, first) })
      t.equal(response.statusCode, 200)
      const sessions = response.json()
      t.equal(sessions.length, 2)
      for (const session of sessions) {
        t.same(Object.keys(session).sort(), ['created_at', 'current', 'id', 'ip', 'last_used_at', 'user_agent'])
        t.equal(session.ip, '127.0.0.1')
        t.ok(Date.parse(session.created_at) <= Date.parse(session.last_used_at))
      }
      const current = sessions.find((session: { current: boolean }) => session.current)
      t.equal(current.id, sessionIdOf(first.accessToken))
      const other = sessions.find((session: { current: boolean }) => !session.current)
      t.equal(other.id, sessionIdOf(laptop.json().accessToken))
      t.equal(other.user_agent, 'Laptop Browser/1.0')
    })

    t.test('a refresh updates last_used_at', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const [before] = (await server.inject({ method: 'GET', url: '/auth/sessions', ...credentials(variant, session) })).json()
      await new Promise(resolve => setTimeout(resolve, 5))
      const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) })
      t.equal(refresh.statusCode, 200)
      const [after] = (await server.inject({ method: 'GET', url: '/auth/sessions', ...credentials(variant, session) })).json()
      t.equal(after.created_at, before.created_at)
      t.ok(Date.parse(after.last_used_at) > Date.parse(before.last_used_at))
    })

    t.test('deleting another session revokes its refresh and access tokens at once', async (t) => {
      const server = await build(t, { variant })
      const mine = await loggedInUser(server, variant)
      const other = await logIn(server, variant, mine.user)
      const url = `/auth/sessions/${sessionIdOf(other.accessToken)}`
      const deletion = await server.inject({ method: 'DELETE', url, ...credentials(variant, mine) })
      t.equal(deletion.statusCode, 204)
      t.equal(deletion.body, '')
      assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, other) }), 401, 'INVALID_REFRESH_TOKEN')
      assertError(t, await server.inject({ method: 'GET', url: `/users/${mine.user.id}`, ...credentials(variant, other) }), 401, 'SESSION_REVOKED')
      t.equal((await server.inject({ method: 'GET', url: `/users/${mine.user.id}`, ...credentials(variant, mine) })).statusCode, 200, 'mine lives on')
      const listed = (await server.inject({ method: 'GET', url: '/auth/sessions', ...credentials(variant, mine) })).json()
      t.same(listed.map((session: { id: string }) => session.id), [sessionIdOf(mine.accessToken)])
      t.equal((await server.inject({ method: 'DELETE', url, ...credentials(variant, mine) })).statusCode, 204, 'idempotent')
    })

    t.test('deleting the current session ends it (a logout)', async (t) => {
      const server = await build(t, { variant })
      const mine = await loggedInUser(server, variant)
      const deletion = await server.inject({ method: 'DELETE', url: `/auth/sessions/${sessionIdOf(mine.accessToken)}`, ...credentials(variant, mine) })
      t.equal(deletion.statusCode, 204)
      if (variant === 'cookie') t.ok((deletion.cookies as Array<{ name: string, value: string }>).every(cookie => cookie.value === ''), 'cookies cleared')
      assertError(t, await server.inject({ method: 'GET', url: '/auth/sessions', ...credentials(variant, mine) }), 401, 'SESSION_REVOKED')
    })

    t.test('another user\'s session id, or an unknown one, is 404 and changes nothing', async (t) => {
      const server = await build(t, { variant })
      const mine = await loggedInUser(server, variant)
      const theirs = await loggedInUser(server, variant)
      for (const sessionId of [sessionIdOf(theirs.accessToken), 'no-such-session']) {
        assertError(t, await server.inject({ method: 'DELETE', url: `/auth/sessions/${sessionId}`, ...credentials(variant, mine) }), 404, 'SESSION_NOT_FOUND')
      }
      t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, theirs) })).statusCode, 200)
      assertError(t, await server.inject({ method: 'DELETE', url: `/auth/sessions/${'x'.repeat(65)}`, ...credentials(variant, mine) }), 400, 'VALIDATION_FAILED')
      assertError(t, await server.inject({ method: 'GET', url: '/auth/sessions' }), 401, 'MISSING_TOKEN')
    })

    t.test('logout revokes the access token of its session too', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      t.equal((await server.inject({ method: 'POST', url: '/auth/logout', ...credentials(variant, session) })).statusCode, 204)
      assertError(t, await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(variant, session) }), 401, 'SESSION_REVOKED')
    })
  })

  t.test(`${variant} variant: DELETE /users/:userId`, async (t) => {
    t.test('with the password deletes the user; every session and token of it stops working', async (t) => {
      const server = await build(t, { variant })
      const mine = await loggedInUser(server, variant)
      const other = await logIn(server, variant, mine.user)
      const survivor = await loggedInUser(server, variant)
      const url = `/users/${mine.user.id}`
      const deletion = await server.inject({ method: 'DELETE', url, ...credentials(variant, mine), payload: { password: mine.user.password } })
      t.equal(deletion.statusCode, 204)
      t.equal(deletion.body, '')
      if (variant === 'cookie') t.ok((deletion.cookies as Array<{ name: string, value: string }>).every(cookie => cookie.value === ''), 'cookies cleared')
      for (const session of [mine, other]) {
        assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) }), 401, 'INVALID_REFRESH_TOKEN')
        assertError(t, await server.inject({ method: 'GET', url, ...credentials(variant, session) }), 404, 'USER_NOT_FOUND')
        assertError(t, await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) }), 404, 'USER_NOT_FOUND')
      }
      assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: mine.user.email, password: mine.user.password } }), 401, 'INVALID_CREDENTIALS')
      t.equal((await server.inject({ method: 'GET', url: `/users/${survivor.user.id}`, ...credentials(variant, survivor) })).statusCode, 200, 'other users are untouched')
      const again = await server.inject({ method: 'POST', url: '/auth/register', payload: mine.user.body })
      t.equal(again.statusCode, 201, 'the email is free again')
    })

    t.test('a wrong password is 401, another user\'s id 403, no body 400; nothing is deleted', async (t) => {
      const server = await build(t, { variant })
      const mine = await loggedInUser(server, variant)
      const theirs = await loggedInUser(server, variant)
      assertError(t, await server.inject({ method: 'DELETE', url: `/users/${mine.user.id}`, ...credentials(variant, mine), payload: { password: 'not my password' } }), 401, 'INVALID_CREDENTIALS')
      assertError(t, await server.inject({ method: 'DELETE', url: `/users/${theirs.user.id}`, ...credentials(variant, mine), payload: { password: mine.user.password } }), 403, 'FORBIDDEN')
      assertError(t, await server.inject({ method: 'DELETE', url: `/users/${mine.user.id}`, ...credentials(variant, mine) }), 400, 'VALIDATION_FAILED')
      assertError(t, await server.inject({ method: 'DELETE', url: `/users/${mine.user.id}`, payload: { password: mine.user.password } }), 401, 'MISSING_TOKEN')
      for (const session of [mine, theirs]) {
        t.equal((await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(variant, session) })).statusCode, 200)
      }
    })
  })
}

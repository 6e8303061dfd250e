import t from 'tap'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { assertError } from '../fixtures/assertions.js'
import { loggedInUser, newUserBody, registerUser } from '../fixtures/factories.js'

const variant = 'header'

t.test('register answers 201 with the new user and no username or password', async (t) => {
  const server = await build(t, { variant })
  const body = newUserBody(variant)
  const response = await server.inject({ method: 'POST', url: '/auth/register', payload: body })
  t.equal(response.statusCode, 201)
  t.same(response.json(), { id: 1, first_name: 'Ada', last_name: 'Lovelace', email: body.email })
})

t.test('register refuses a username, which the header variant does not have', async (t) => {
  const server = await build(t, { variant })
  const response = await server.inject({ method: 'POST', url: '/auth/register', payload: { ...newUserBody(variant), username: 'ada' } })
  assertError(t, response, 400, 'VALIDATION_FAILED')
})

t.test('login answers with the user, an access token and a refresh token', async (t) => {
  const server = await build(t, { variant })
  const user = await registerUser(server, variant)
  const response = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  t.equal(response.statusCode, 200)
  const body = response.json()
  t.same(Object.keys(body).sort(), ['accessToken', 'refreshToken', 'user'])
  t.same(body.user, { id: user.id, first_name: 'Ada', last_name: 'Lovelace', email: user.email })
  t.match(body.accessToken, /^[\w-]+\.[\w-]+\.[\w-]+$/)
  t.match(body.refreshToken, /^[\w-]{43}$/)
  t.same(response.cookies, [], 'no cookies in the header variant')
})

for (const route of ['/auth/refresh-token', '/auth/auth-me']) {
  t.test(`${route} with both headers answers a new access token only`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const response = await server.inject({
      method: 'POST',
      url: route,
      headers: { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
    })
    t.equal(response.statusCode, 200)
    t.same(Object.keys(response.json()), ['accessToken'])
    const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${response.json().accessToken}` } })
    t.equal(read.statusCode, 200, 'the new access token reads the user')
  })

  t.test(`${route} does not rotate: the same refresh token works again`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const headers = { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
    for (let attempt = 0; attempt < 3; attempt++) {
      t.equal((await server.inject({ method: 'POST', url: route, headers })).statusCode, 200)
    }
  })

  t.test(`${route} without either header is 401 MISSING_TOKEN`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const onlyAccess = await server.inject({ method: 'POST', url: route, headers: { authorization: `Bearer ${session.accessToken}` } })
    assertError(t, onlyAccess, 401, 'MISSING_TOKEN')
    const onlyRefresh = await server.inject({ method: 'POST', url: route, headers: { 'x-refresh-token': `Bearer ${session.refreshToken}` } })
    assertError(t, onlyRefresh, 401, 'MISSING_TOKEN')
    const notBearer = await server.inject({
      method: 'POST',
      url: route,
      headers: { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': session.refreshToken }
    })
    assertError(t, notBearer, 401, 'MISSING_TOKEN')
  })

  t.test(`${route} with an access token of another user is 401 TOKEN_MISMATCH`, async (t) => {
    const server = await build(t, { variant })
    const ada = await loggedInUser(server, variant)
    const grace = await loggedInUser(server, variant, { first_name: 'Grace' })
    const response = await server.inject({
      method: 'POST',
      url: route,
      headers: { authorization: `Bearer ${grace.accessToken}`, 'x-refresh-token': `Bearer ${ada.refreshToken}` }
    })
    assertError(t, response, 401, 'TOKEN_MISMATCH')
  })

  t.test(`${route} with a refresh token that is not in the store is 401`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const response = await server.inject({
      method: 'POST',
      url: route,
      headers: { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${'A'.repeat(43)}` }
    })
    assertError(t, response, 401, 'INVALID_REFRESH_TOKEN')
  })

  t.test(`${route} with a garbled access token is 401 INVALID_TOKEN`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const response = await server.inject({
      method: 'POST',
      url: route,
      headers: { authorization: 'Bearer not.a.jwt', 'x-refresh-token': `Bearer ${session.refreshToken}` }
    })
    assertError(t, response, 401, 'INVALID_TOKEN')
  })
}

t.test('refresh accepts an expired access token of the same user (that is what refresh is for)', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant, env: { ACCESS_TOKEN_TTL: '1' }, clock })
  const session = await loggedInUser(server, variant)
  clock.advance(1100)
  const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}` } })
  assertError(t, read, 401, 'TOKEN_EXPIRED')
  const response = await server.inject({
    method: 'POST',
    url: '/auth/refresh-token',
    headers: { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
  })
  t.equal(response.statusCode, 200)
})

t.test('refresh refuses an expired-looking access token that we did not sign', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const [header, payload] = session.accessToken.split('.')
  const forged = `${header}.${payload}.${Buffer.alloc(64, 1).toString('base64url')}`
  const response = await server.inject({
    method: 'POST',
    url: '/auth/refresh-token',
    headers: { authorization: `Bearer ${forged}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
  })
  assertError(t, response, 401, 'INVALID_TOKEN')
})

t.test('after logout the refresh token is refused, and logout again is still 204', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const headers = { authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
  t.equal((await server.inject({ method: 'POST', url: '/auth/logout', headers })).statusCode, 204)
  t.equal((await server.inject({ method: 'POST', url: '/auth/logout', headers })).statusCode, 204)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', headers }), 401, 'INVALID_REFRESH_TOKEN')
})

t.test('PATCH /users/:userId does not exist in the header variant', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const response = await server.inject({
    method: 'PATCH',
    url: `/users/${session.user.id}`,
    headers: { authorization: `Bearer ${session.accessToken}` },
    payload: { first_name: 'Augusta' }
  })
  assertError(t, response, 404, 'NOT_FOUND')
})

t.test('the header variant ignores token cookies', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const response = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, cookies: { accessToken: session.accessToken } })
  assertError(t, response, 401, 'MISSING_TOKEN')
})

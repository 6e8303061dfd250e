import t from 'tap'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { assertError } from '../fixtures/assertions.js'
import { cookieValue, loggedInUser, newUserBody, registerUser } from '../fixtures/factories.js'

const variant = 'cookie'

interface ParsedCookie { name: string, value: string, path?: string, maxAge?: number, httpOnly?: boolean, secure?: boolean, sameSite?: string }

t.test('register answers 201 with the new user, username included', async (t) => {
  const server = await build(t, { variant })
  const body = newUserBody(variant, { username: 'Ada.L' })
  const response = await server.inject({ method: 'POST', url: '/auth/register', payload: body })
  t.equal(response.statusCode, 201)
  t.same(response.json(), { id: 1, first_name: 'Ada', last_name: 'Lovelace', username: 'Ada.L', email: body.email })
})

t.test('register without a username is 400', async (t) => {
  const server = await build(t, { variant })
  const { username, ...body } = newUserBody(variant)
  t.ok(username)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload: body }), 400, 'VALIDATION_FAILED')
})

t.test('a username taken in another case is 409 USERNAME_TAKEN', async (t) => {
  const server = await build(t, { variant })
  await registerUser(server, variant, { username: 'Grace' })
  const response = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody(variant, { username: 'gRACE' }) })
  assertError(t, response, 409, 'USERNAME_TAKEN')
})

t.test('login answers user and accessToken, and sets both cookies HttpOnly, Secure, SameSite=Strict', async (t) => {
  const server = await build(t, { variant })
  const user = await registerUser(server, variant)
  const response = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  t.equal(response.statusCode, 200)
  const body = response.json()
  t.same(Object.keys(body).sort(), ['accessToken', 'user'], 'no refreshToken in the body')
  t.same(body.user, { id: user.id, first_name: 'Ada', last_name: 'Lovelace', username: user.body.username, email: user.email })
  const cookies = response.cookies as ParsedCookie[]
  const access = cookies.find(cookie => cookie.name === 'accessToken')
  const refresh = cookies.find(cookie => cookie.name === 'refreshToken')
  t.match(access, { value: body.accessToken, path: '/', maxAge: 900, httpOnly: true, secure: true, sameSite: 'Strict' })
  t.match(refresh, { path: '/auth', maxAge: 30 * 86400, httpOnly: true, secure: true, sameSite: 'Strict' })
  t.match(refresh?.value, /^[\w-]{43}$/)
})

t.test('COOKIE_SECURE=false leaves Secure off', async (t) => {
  const server = await build(t, { variant, env: { COOKIE_SECURE: 'false' } })
  const session = await loggedInUser(server, variant)
  for (const cookie of session.response.cookies as ParsedCookie[]) t.notOk(cookie.secure, `${cookie.name} is not Secure`)
})

t.test('refresh from the cookie rotates the refresh token and sets a new access cookie', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const response = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  t.equal(response.statusCode, 200)
  t.same(Object.keys(response.json()), ['accessToken'])
  t.equal(cookieValue(response, 'accessToken'), response.json().accessToken)
  const rotated = cookieValue(response, 'refreshToken')
  t.not(rotated, session.refreshToken, 'a new refresh token')

  const again = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: rotated } })
  t.equal(again.statusCode, 200, 'the rotated token works')
})

t.test('refresh without the cookie is 401 MISSING_TOKEN', async (t) => {
  const server = await build(t, { variant })
  assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token' }), 401, 'MISSING_TOKEN')
})

t.test('refresh with a cookie that is not in the store is 401', async (t) => {
  const server = await build(t, { variant })
  const response = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: 'B'.repeat(43) } })
  assertError(t, response, 401, 'INVALID_REFRESH_TOKEN')
})

t.test('an expired refresh token is 401', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant, env: { REFRESH_TOKEN_TTL: '1' }, clock })
  const session = await loggedInUser(server, variant)
  clock.advance(1100)
  const response = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  assertError(t, response, 401, 'INVALID_REFRESH_TOKEN')
})

t.test('logout revokes the session, clears both cookies, and is idempotent', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const cookies = { accessToken: session.accessToken, refreshToken: session.refreshToken }
  const response = await server.inject({ method: 'POST', url: '/auth/logout', cookies })
  t.equal(response.statusCode, 204)
  t.equal(response.body, '')
  const cleared = response.cookies as ParsedCookie[]
  t.match(cleared.find(cookie => cookie.name === 'accessToken'), { value: '', path: '/' })
  t.match(cleared.find(cookie => cookie.name === 'refreshToken'), { value: '', path: '/auth' })
  t.equal((await server.inject({ method: 'POST', url: '/auth/logout', cookies })).statusCode, 204)
  t.equal((await server.inject({ method: 'POST', url: '/auth/logout' })).statusCode, 204)
  const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies })
  assertError(t, refresh, 401, 'INVALID_REFRESH_TOKEN')
})

t.test('/auth/auth-me does not exist in the cookie variant', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const response = await server.inject({ method: 'POST', url: '/auth/auth-me', cookies: { refreshToken: session.refreshToken } })
  assertError(t, response, 404, 'NOT_FOUND')
})

t.test('the cookie variant does not read tokens from headers', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const response = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}` } })
  assertError(t, response, 401, 'MISSING_TOKEN')
})

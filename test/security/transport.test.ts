import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { loggedInUser, newUserBody } from '../fixtures/factories.js'

interface Cookie { name: string, httpOnly?: boolean, secure?: boolean, sameSite?: string, path?: string, maxAge?: number }

t.test('cookies cannot be read by page script, sent over plain HTTP, sent cross-site, or sent to routes that do not need them', async (t) => {
  const server = await build(t, { variant: 'cookie', env: { ACCESS_TOKEN_TTL: '15m', REFRESH_TOKEN_TTL: '30d' } })
  const session = await loggedInUser(server, 'cookie')
  const cookies = Object.fromEntries((session.response.cookies as Cookie[]).map(cookie => [cookie.name, cookie]))
  t.match(cookies.accessToken, { httpOnly: true, secure: true, sameSite: 'Strict', path: '/', maxAge: 900 })
  t.match(cookies.refreshToken, { httpOnly: true, secure: true, sameSite: 'Strict', path: '/auth', maxAge: 30 * 86400 })
})

t.test('a body over BODY_LIMIT is refused with 413 before it is parsed', async (t) => {
  const server = await build(t, { variant: 'cookie', env: { BODY_LIMIT: '2048' } })
  const response = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie', { first_name: 'A'.repeat(4096) }) })
  assertError(t, response, 413, 'PAYLOAD_TOO_LARGE')
})

t.test('every answer carries security headers: no sniffing, no framing, no content loaded, HSTS', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  const answers = [
    await server.inject({ method: 'GET', url: '/health' }),
    await server.inject({ method: 'GET', url: '/no-such-route' }),
    await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'a@example.com', password: 'wrong one 1' } })
  ]
  for (const response of answers) {
    t.equal(response.headers['x-content-type-options'], 'nosniff')
    t.equal(response.headers['x-frame-options'], 'DENY')
    t.match(response.headers['content-security-policy'], /default-src 'none'/)
    t.match(response.headers['content-security-policy'], /frame-ancestors 'none'/)
    t.match(response.headers['strict-transport-security'], /max-age=\d+/)
    t.notOk(response.headers['x-powered-by'])
  }
})

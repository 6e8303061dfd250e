import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import t from 'tap'
import app, { serverOptions } from '../../src/app.js'
import { build, testConfig } from '../fixtures/build.js'
import { cookieValue, credentials, logIn, loggedInUser, registerUser } from '../fixtures/factories.js'

/*
 * Finding 8 of the review: failed logins, lockouts, reuse detection, password
 * and email changes left counters only. Each is now a security event: a record
 * the user sees at GET /auth/security-events, and a log line with `event`.
 */

const variant = 'cookie'
const eventsOf = async (server: FastifyInstance, session: { accessToken: string, refreshToken: string }, query = '') =>
  await server.inject({ method: 'GET', url: `/auth/security-events${query}`, ...credentials(variant, session) })

t.test('a user\'s security events: newest first, with address and device, only its own, paged with ?before=', async (t) => {
  const server = await build(t, { variant, env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '2', RATE_LIMIT_LOCKOUT: '1s' } })
  const user = await registerUser(server, variant)
  const stranger = await loggedInUser(server, variant)
  const wrong = { method: 'POST' as const, url: '/auth/login', payload: { email: user.email, password: 'wrong guess' }, headers: { 'user-agent': 'guesser/1.0' }, remoteAddress: '203.0.113.9' }
  await server.inject(wrong)
  await server.inject(wrong)
  await new Promise(resolve => setTimeout(resolve, 1100))
  const session = await logIn(server, variant, user)
  await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload: { password: user.password } })
  const change = await server.inject({ method: 'POST', url: '/auth/change-password', ...credentials(variant, session), payload: { current_password: user.password, new_password: 'a brand new secret' } })
  t.equal(change.statusCode, 204)
  const renewed = { accessToken: cookieValue(change, 'accessToken'), refreshToken: cookieValue(change, 'refreshToken') }
  const email = await server.inject({ method: 'PATCH', url: `/users/${user.id}`, ...credentials(variant, renewed), payload: { email: 'moved@example.com' } })
  t.equal(email.statusCode, 204)
  const current = { accessToken: cookieValue(email, 'accessToken'), refreshToken: cookieValue(email, 'refreshToken') }

  const listed = await eventsOf(server, current)
  t.equal(listed.statusCode, 200)
  t.equal(listed.headers['cache-control'], 'no-store')
  const events = listed.json().events as Array<{ id: number, type: string, created_at: string, ip: string | null, user_agent: string | null }>
  t.same(events.map(event => event.type), ['email_changed', 'session_revoked', 'password_changed', 'reauthenticated', 'login', 'account_locked', 'login_failed', 'login_failed'])
  t.same(Object.keys(events[0]).sort(), ['created_at', 'id', 'ip', 'type', 'user_agent'])
  t.match(events.at(-1), { ip: '203.0.113.9', user_agent: 'guesser/1.0' }, 'where the failure came from')
  t.ok(events.every((event, index) => index === 0 || event.created_at <= events[index - 1].created_at), 'newest first')

  const page = (await eventsOf(server, current, `?limit=3&before=${events[2].id}`)).json().events as typeof events
  t.same(page.map(event => event.id), events.slice(3, 6).map(event => event.id), 'the page after a given event')
  t.same((await eventsOf(server, stranger)).json().events.map((event: { type: string }) => event.type), ['login'], 'another user sees only its own')
  t.equal((await eventsOf(server, current, '?before=abc')).statusCode, 400)
})

t.test('a reused refresh token, a logout and a password reset are events too', async (t) => {
  const server = await build(t, { variant, env: { REFRESH_REUSE_GRACE: '0' } })
  const session = await loggedInUser(server, variant)
  const rotated = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  t.equal(rotated.statusCode, 200)
  t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })).statusCode, 401)
  const later = await logIn(server, variant, session.user)
  await server.inject({ method: 'POST', url: '/auth/logout', ...credentials(variant, later) })
  const last = await logIn(server, variant, session.user)
  const types = (await eventsOf(server, last)).json().events.map((event: { type: string }) => event.type)
  t.same(types.slice(0, 4), ['login', 'session_revoked', 'login', 'refresh_token_reused'])
})

t.test('each event is one log line with an `event` field', async (t) => {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  const config = testConfig({ API_VARIANT: variant, LOG_LEVEL: 'info' })
  const options = serverOptions(config)
  const server = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  await server.register(fp(app), { config })
  t.teardown(() => server.close())
  const user = await registerUser(server, variant)
  await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'wrong guess' } })
  await logIn(server, variant, user)
  const logged = lines.filter(line => line.event !== undefined)
  t.same(logged.map(line => line.event), ['login_failed', 'login'])
  t.match(logged[1], { userId: user.id, sessionId: String, reqId: String })
})

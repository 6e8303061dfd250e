import { Writable } from 'node:stream'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t from 'tap'
import app, { serverOptions } from '../../src/app.js'
import { cookieValue, loggedInUser } from '../fixtures/factories.js'
import { CHEAP_HASH_PARAMETERS, testConfig } from '../fixtures/build.js'

t.test('the log lines of a register, login, refresh and logout carry no password, token or cookie', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(chunk.toString()); done() } })
  const config = testConfig({ API_VARIANT: 'cookie', LOG_LEVEL: 'trace' })
  const options = serverOptions(config)
  const server = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  t.teardown(() => server.close())

  const session = await loggedInUser(server, 'cookie')
  const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  const rotatedRefreshToken = cookieValue(refresh, 'refreshToken')
  await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}` } })
  await server.inject({ method: 'POST', url: '/auth/logout', cookies: { refreshToken: rotatedRefreshToken }, headers: { 'x-refresh-token': `Bearer ${rotatedRefreshToken}` } })

  const log = lines.join('')
  t.ok(lines.length >= 8, `${lines.length} log lines were written`)
  t.match(log, /"cookie":"\[redacted\]"/, 'the cookie header was logged, redacted')
  t.match(log, /"authorization":"\[redacted\]"/, 'the authorization header was logged, redacted')
  const secrets = {
    password: session.user.password,
    'access token': session.accessToken,
    'new access token': refresh.json().accessToken,
    'refresh token': session.refreshToken,
    'rotated refresh token': rotatedRefreshToken
  }
  for (const [name, secret] of Object.entries(secrets)) t.notOk(log.includes(secret), `no ${name} in the log`)
})

t.test('any logged object has its password and token fields redacted', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(chunk.toString()); done() } })
  const options = serverOptions(testConfig({ LOG_LEVEL: 'info' }))
  const server = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  t.teardown(() => server.close())
  server.log.info({ body: { email: 'a@example.com', password: 'hunter2 secret' }, refreshToken: 'opaque-secret', user: { tokens: { accessToken: 'jwt-secret' } } }, 'careless')
  const log = lines.join('')
  for (const secret of ['hunter2 secret', 'opaque-secret', 'jwt-secret']) t.notOk(log.includes(secret), `${secret} redacted`)
  t.match(log, /a@example\.com/, 'the rest stays')
})

t.test('a token in a query string never reaches the log (the logged URL has no query)', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(chunk.toString()); done() } })
  const config = testConfig({ API_VARIANT: 'cookie', LOG_LEVEL: 'info' })
  const options = serverOptions(config)
  const server = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
  t.teardown(() => server.close())

  // A mailed link opened against the API, a known route and an unknown one.
  await server.inject({ method: 'GET', url: '/health?token=secret-reset-token' })
  await server.inject({ method: 'GET', url: '/reset-password?token=secret-verify-token&x=1' })
  const log = lines.join('')
  t.match(log, /"url":"\/health"/, 'the path is logged')
  t.match(log, /"url":"\/reset-password"/, 'the unknown path is logged too')
  t.notOk(log.includes('secret-reset-token'), 'no token of a known route in the log')
  t.notOk(log.includes('secret-verify-token'), 'no token of an unknown route in the log')
})

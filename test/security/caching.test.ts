import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { build } from '../fixtures/build.js'
import { loggedInUser, newUserBody } from '../fixtures/factories.js'
import type { Variant } from '../../core/config.js'

// Finding 11: an answer that carries a token or personal data must not be kept by a browser or proxy cache.
for (const variant of ['header', 'cookie'] as Variant[]) {
  t.test(`${variant} variant: every answer of /auth and /users says Cache-Control: no-store, errors included`, async (t) => {
    const server = await build(t, { variant, env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGISTER_MAX: '1000' } })
    const session = await loggedInUser(server, variant)
    const bearer = { authorization: `Bearer ${session.accessToken}` }
    const refreshFields = variant === 'header'
      ? { headers: { ...bearer, 'x-refresh-token': `Bearer ${session.refreshToken}` } }
      : { cookies: { refreshToken: session.refreshToken } }
    const answers: Record<string, LightMyRequestResponse> = {
      'register (201)': await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody(variant) }),
      'login (200)': session.response,
      'refresh (200)': await server.inject({ method: 'POST', url: '/auth/refresh-token', ...refreshFields }),
      'get user (200)': await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: bearer }),
      'wrong login (401)': await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: 'not the password' } }),
      'no token (401)': await server.inject({ method: 'GET', url: `/users/${session.user.id}` }),
      'bad body (400)': await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'x' } })
    }
    for (const [name, response] of Object.entries(answers)) {
      t.equal(response.headers['cache-control'], 'no-store', `${name}: ${response.statusCode}, no-store`)
    }
    const health = await server.inject({ method: 'GET', url: '/health' })
    t.not(health.headers['cache-control'], 'no-store', 'answers without personal data are left alone')
  })
}

import type { LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { loggedInUser, registerUser } from '../fixtures/factories.js'

const APP = 'https://app.example.com'
const OTHER = 'https://evil.example'

/** The CORS headers of an answer. */
function corsHeaders (response: LightMyRequestResponse): Record<string, unknown> {
  return Object.fromEntries(Object.entries(response.headers).filter(([name]) => name.startsWith('access-control-')))
}

function preflight (origin: string, method = 'POST', headers = 'content-type') {
  return { method: 'OPTIONS' as const, url: '/auth/login', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers } }
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: without ALLOWED_ORIGINS no origin gets a CORS header, and a preflight finds no route`, async (t) => {
    const server = await build(t, { variant })
    const user = await registerUser(server, variant)
    const login = await server.inject({ method: 'POST', url: '/auth/login', headers: { origin: APP }, payload: { email: user.email, password: user.password } })
    t.equal(login.statusCode, 200, 'a non-browser client with an Origin is still served')
    t.same(corsHeaders(login), {})
    const answer = await server.inject(preflight(APP))
    assertError(t, answer, 404, 'NOT_FOUND')
    t.same(corsHeaders(answer), {})
  })

  t.test(`${variant} variant: a listed origin's preflight allows the token headers and JSON, with credentials`, async (t) => {
    const server = await build(t, { variant, env: { ALLOWED_ORIGINS: `${APP}, https://admin.example.com` } })
    const answer = await server.inject(preflight(APP, 'PATCH', 'authorization,x-refresh-token,content-type'))
    t.equal(answer.statusCode, 204)
    t.equal(answer.headers['access-control-allow-origin'], APP, 'its own origin, never *')
    t.equal(answer.headers['access-control-allow-credentials'], 'true')
    t.same(String(answer.headers['access-control-allow-headers']).split(', ').sort(), ['Authorization', 'Content-Type', 'X-Refresh-Token'])
    t.same(String(answer.headers['access-control-allow-methods']).split(', ').sort(), ['DELETE', 'GET', 'PATCH', 'POST'])
    t.equal(answer.headers['access-control-max-age'], '600')
    t.match(answer.headers.vary, /Origin/, 'caches keep answers to different origins apart')
    const admin = await server.inject(preflight('https://admin.example.com'))
    t.equal(admin.headers['access-control-allow-origin'], 'https://admin.example.com', 'every listed origin')
  })

  t.test(`${variant} variant: an unlisted origin gets no CORS header, on a preflight or on a request`, async (t) => {
    const server = await build(t, { variant, env: { ALLOWED_ORIGINS: APP } })
    const answer = await server.inject(preflight(OTHER))
    t.equal(answer.statusCode, 404)
    t.same(corsHeaders(answer), {}, 'no credentials, no methods, no headers')
    for (const origin of [OTHER, 'null', `${APP}:8443`, 'http://app.example.com']) {
      const health = await server.inject({ method: 'GET', url: '/health', headers: { origin } })
      t.same(corsHeaders(health), {}, origin)
    }
    const noOrigin = await server.inject({ method: 'GET', url: '/health' })
    t.same(corsHeaders(noOrigin), {}, 'a request without Origin gets none either')
  })

  t.test(`${variant} variant: a listed origin's requests carry its CORS headers, errors included`, async (t) => {
    const server = await build(t, { variant, env: { ALLOWED_ORIGINS: APP } })
    const user = await registerUser(server, variant)
    const login = await server.inject({ method: 'POST', url: '/auth/login', headers: { origin: APP }, payload: { email: user.email, password: user.password } })
    t.equal(login.statusCode, 200)
    t.equal(login.headers['access-control-allow-origin'], APP)
    t.equal(login.headers['access-control-allow-credentials'], 'true')
    t.same(String(login.headers['access-control-expose-headers']).split(', ').sort(), ['Retry-After', 'X-Request-Id'])
    const wrong = await server.inject({ method: 'POST', url: '/auth/login', headers: { origin: APP }, payload: { email: user.email, password: 'wrong password' } })
    assertError(t, wrong, 401, 'INVALID_CREDENTIALS')
    t.equal(wrong.headers['access-control-allow-origin'], APP, 'the app can read the error')
  })
}

t.test('cookie variant: the cross-site check and CORS agree on which origins may send cookies', async (t) => {
  const server = await build(t, { variant: 'cookie', env: { ALLOWED_ORIGINS: APP } })
  const session = await loggedInUser(server, 'cookie')
  const cookies = { accessToken: session.accessToken }
  const patch = { method: 'PATCH' as const, url: `/users/${session.user.id}`, cookies, payload: { last_name: 'King' } }
  const listed = await server.inject({ ...patch, headers: { origin: APP, 'sec-fetch-site': 'same-site' } })
  t.equal(listed.statusCode, 204, 'a listed origin on the same site is served')
  t.equal(listed.headers['access-control-allow-origin'], APP)
  const unlisted = await server.inject({ ...patch, headers: { origin: OTHER } })
  assertError(t, unlisted, 403, 'CROSS_SITE_REQUEST')
  t.same(corsHeaders(unlisted), {}, 'and its browser cannot read the refusal either')
  // SameSite=Strict cookies never ride along cross-site; a request that claims to be cross-site and has them is refused.
  assertError(t, await server.inject({ ...patch, headers: { origin: APP, 'sec-fetch-site': 'cross-site' } }), 403, 'CROSS_SITE_REQUEST')
})

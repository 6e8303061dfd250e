import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { loggedInUser } from '../fixtures/factories.js'

t.test('cookie variant: a state-changing request with cookies from another site is 403 CROSS_SITE_REQUEST', async (t) => {
  const server = await build(t, { variant: 'cookie', env: { ALLOWED_ORIGINS: 'https://app.example.com' } })
  const session = await loggedInUser(server, 'cookie')
  const cookies = { accessToken: session.accessToken, refreshToken: session.refreshToken }
  const patch = { method: 'PATCH' as const, url: `/users/${session.user.id}`, cookies, payload: { first_name: 'Mallory' } }

  assertError(t, await server.inject({ ...patch, headers: { 'sec-fetch-site': 'cross-site' } }), 403, 'CROSS_SITE_REQUEST')
  assertError(t, await server.inject({ ...patch, headers: { origin: 'https://evil.example' } }), 403, 'CROSS_SITE_REQUEST')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies, headers: { origin: 'null' } }), 403, 'CROSS_SITE_REQUEST')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/logout', cookies, headers: { origin: 'https://evil.example' } }), 403, 'CROSS_SITE_REQUEST')
  const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, cookies })
  t.equal(read.json().first_name, 'Ada', 'nothing changed')
  t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies })).statusCode, 200, 'the session still lives')
})

t.test('cookie variant: our own origin, an allowed origin, same-site and non-browser clients are served', async (t) => {
  const server = await build(t, { variant: 'cookie', env: { ALLOWED_ORIGINS: 'https://app.example.com' } })
  const session = await loggedInUser(server, 'cookie')
  const cookies = { accessToken: session.accessToken }
  const url = `/users/${session.user.id}`
  for (const headers of [
    { origin: 'http://localhost:80', host: 'localhost:80' },
    { origin: 'https://app.example.com' },
    { 'sec-fetch-site': 'same-origin', origin: 'https://app.example.com' },
    {}
  ]) {
    const response = await server.inject({ method: 'PATCH', url, cookies, headers, payload: { last_name: 'King' } })
    t.equal(response.statusCode, 204, JSON.stringify(headers))
  }
})

t.test('header variant: tokens in headers cannot ride along cross-site, so Origin is not checked', async (t) => {
  const server = await build(t, { variant: 'header' })
  const session = await loggedInUser(server, 'header')
  const response = await server.inject({
    method: 'POST',
    url: '/auth/refresh-token',
    headers: { origin: 'https://evil.example', authorization: `Bearer ${session.accessToken}`, 'x-refresh-token': `Bearer ${session.refreshToken}` }
  })
  t.equal(response.statusCode, 200)
})

t.test('cookie variant: the provider\'s sign-in pages refuse a cross-site post with cookies, and no answer of theirs is cached', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  const session = await loggedInUser(server, 'cookie')
  const crossSite = await server.inject({
    method: 'POST',
    url: '/oauth/interaction/some-uid/login',
    cookies: { accessToken: session.accessToken },
    headers: { origin: 'https://evil.example' }
  })
  assertError(t, crossSite, 403, 'CROSS_SITE_REQUEST')
  t.equal(crossSite.headers['cache-control'], 'no-store')
  const page = await server.inject({ method: 'GET', url: '/oauth/interaction/some-uid' })
  t.equal(page.statusCode, 200)
  t.equal(page.headers['cache-control'], 'no-store')
})

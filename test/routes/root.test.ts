import t from 'tap'
import { build } from '../fixtures/build.js'

// GET / is the address `npm start` prints: a person who opens it lands somewhere useful, never on a 404.

t.test('the root leads to the account console where pages are served', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  const response = await server.inject({ method: 'GET', url: '/' })
  t.equal(response.statusCode, 302)
  t.equal(response.headers.location, '/account')
  const console = await server.inject({ method: 'GET', url: '/account' })
  t.equal(console.statusCode, 200)
})

t.test('the console links the API reference where DOCS is on, and not where it is off', async (t) => {
  const withDocs = await build(t, { variant: 'cookie', env: { DOCS: 'true' } })
  t.match((await withDocs.inject({ method: 'GET', url: '/account' })).body, '<a href="/docs">API reference</a>')
  t.equal((await withDocs.inject({ method: 'GET', url: '/docs' })).statusCode, 200, 'and it is served there')
  const withoutDocs = await build(t, { variant: 'cookie', env: { DOCS: 'false' } })
  t.notMatch((await withoutDocs.inject({ method: 'GET', url: '/account' })).body, 'API reference')
})

t.test('the console of the cookie variant mounted under a prefix is where the root leads', async (t) => {
  const server = await build(t, { mounts: [{ variant: 'header', prefix: '/a' }, { variant: 'cookie', prefix: '/b' }] })
  const response = await server.inject({ method: 'GET', url: '/' })
  t.equal(response.statusCode, 302)
  t.equal(response.headers.location, '/b/account')
})

t.test('without a console the root says where the documents are, as JSON', async (t) => {
  for (const [env, docs] of [[{ PAGES: 'false', DOCS: 'true' }, '/docs'], [{ PAGES: 'false', DOCS: 'false' }, null]] as const) {
    const server = await build(t, { variant: 'header', env })
    const response = await server.inject({ method: 'GET', url: '/' })
    t.equal(response.statusCode, 200)
    t.match(response.json(), { name: 'account-service', version: String, health: '/health', docs })
  }
})

t.test('the header variant alone has no console: the root answers the map', async (t) => {
  const server = await build(t, { variant: 'header' })
  const response = await server.inject({ method: 'GET', url: '/' })
  t.equal(response.statusCode, 200)
  t.equal(response.json().health, '/health')
})

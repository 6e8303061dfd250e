import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { newUserBody } from '../fixtures/factories.js'

t.test('an unknown route is 404 in the error shape', async (t) => {
  const server = await build(t)
  assertError(t, await server.inject({ method: 'GET', url: '/nowhere' }), 404, 'NOT_FOUND')
  assertError(t, await server.inject({ method: 'DELETE', url: '/auth/login' }), 404, 'NOT_FOUND')
})

t.test('malformed JSON is 400 INVALID_JSON', async (t) => {
  const server = await build(t)
  const response = await server.inject({ method: 'POST', url: '/auth/register', headers: { 'content-type': 'application/json' }, payload: '{"email": ' })
  assertError(t, response, 400, 'INVALID_JSON')
})

t.test('an empty body labelled JSON is no body: refused where a body is needed, fine where none is', async (t) => {
  const server = await build(t)
  const headers = { 'content-type': 'application/json' }
  assertError(t, await server.inject({ method: 'POST', url: '/auth/login', headers, payload: '' }), 400, 'VALIDATION_FAILED')
  t.equal((await server.inject({ method: 'POST', url: '/auth/logout', headers, payload: '' })).statusCode, 204)
})

t.test('JSON with a __proto__ key is refused', async (t) => {
  const server = await build(t)
  const payload = '{"email":"a@example.com","password":"whatever1","__proto__":{"admin":true}}'
  assertError(t, await server.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload }), 400, 'INVALID_JSON')
})

t.test('a body that is not JSON is 415', async (t) => {
  const server = await build(t)
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const response = await server.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': contentType }, payload: 'email=a@example.com&password=x' })
    assertError(t, response, 415, 'UNSUPPORTED_MEDIA_TYPE')
  }
})

t.test('a body over BODY_LIMIT is 413', async (t) => {
  const server = await build(t, { env: { BODY_LIMIT: '2048' } })
  const response = await server.inject({ method: 'POST', url: '/auth/register', payload: { ...newUserBody('cookie'), first_name: 'x'.repeat(4096) } })
  assertError(t, response, 413, 'PAYLOAD_TOO_LARGE')
})

t.test('a malformed URL is 400 in the error shape', async (t) => {
  const server = await build(t)
  assertError(t, await server.inject({ method: 'GET', url: '/users/%E0%A4%A' }), 400, 'VALIDATION_FAILED')
})

t.test('an unexpected failure is 500 without internals, and the server keeps serving', async (t) => {
  const server = await build(t)
  server.store.findUserByEmail = async () => { throw new Error('SQLITE_CORRUPT: secret table details at store.ts:12') }
  const response = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'a@example.com', password: 'whatever1' } })
  assertError(t, response, 500, 'INTERNAL_ERROR')
  t.equal((await server.inject({ method: 'GET', url: '/health' })).statusCode, 200)
})

t.test('GET /health answers 200', async (t) => {
  const server = await build(t)
  const response = await server.inject({ method: 'GET', url: '/health' })
  t.equal(response.statusCode, 200)
  t.same(response.json(), { status: 'ok' })
})

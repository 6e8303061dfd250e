import t from 'tap'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { addClient, providerService, REDIRECT_URI } from '../fixtures/oauth.js'

/*
 * Finding 13 of the third review: PostgreSQL answered 500 to what SQLite took in its stride: a NUL
 * byte (text columns cannot hold one: "invalid byte sequence for encoding UTF8: 0x00") in the admin
 * search, in /oauth/authorize's client_id and in the token endpoint's, and a cursor past the id
 * column's integer range. Each is now a clear client error, the same on both backends (this file runs
 * on the backend under test: TEST_STORE=postgres for PostgreSQL).
 */

t.test('the admin search answers 400 to a NUL byte or a cursor past any id, and still pages as before', async (t) => {
  const { server } = await providerService(t, { variant: 'cookie' })
  const admin = await adminSession(server, 'cookie')
  for (const url of ['/admin/users?query=a%00b', '/admin/users?cursor=9999999999999999', '/admin/users?cursor=2147483648']) {
    const answer = await adminRequest(server, 'cookie', admin, 'GET', url)
    t.equal(answer.statusCode, 400, url)
    t.equal(answer.json().code, 'VALIDATION_FAILED', `${url}: in the error shape`)
  }
  const page = await adminRequest(server, 'cookie', admin, 'GET', '/admin/users?cursor=2147483647&query=ada')
  t.equal(page.statusCode, 200, 'the largest id is a cursor still')
  t.same(page.json().users, [])
  const user = await adminRequest(server, 'cookie', admin, 'GET', '/admin/users/9999999999999')
  t.equal(user.statusCode, 400, 'a user id past the column\'s range is refused')
  for (const url of ['/admin/events?before=100000000000000000000', '/auth/security-events?before=100000000000000000000']) {
    const answer = await adminRequest(server, 'cookie', admin, 'GET', url)
    t.equal(answer.statusCode, 400, `${url}: an event id past the column's range is refused`)
  }
})

t.test('a NUL byte in client_id is an unknown client at /oauth/authorize and /oauth/token, not a 500', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server)
  const authorize = await fetch(`${baseUrl}/oauth/authorize?client_id=a%00b&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`, { redirect: 'manual' })
  t.equal(authorize.status, 400, 'authorize: 400')
  t.match(await authorize.text(), /invalid_client/, 'authorize: invalid_client, as for any unknown client')

  const form = (fields: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() })
  const token = await fetch(`${baseUrl}/oauth/token`, form({ grant_type: 'client_credentials', client_id: 'a\u0000b', client_secret: 'x' }))
  t.equal(token.status, 401, 'token: 401')
  t.equal((await token.json()).error, 'invalid_client')
  for (const encoded of ['a%00b', 'a\u0000b']) {
    const basic = await fetch(`${baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${encoded}:x`).toString('base64')}` },
      body: 'grant_type=client_credentials'
    })
    t.ok(basic.status === 400 || basic.status === 401, `token with HTTP Basic (${JSON.stringify(encoded)}): a client error, ${basic.status}`)
    t.match((await basic.json()).error, /^invalid_(client|request)$/)
  }
  const code = await fetch(`${baseUrl}/oauth/token`, form({ grant_type: 'authorization_code', code: 'a\u0000b', redirect_uri: REDIRECT_URI, code_verifier: 'v'.repeat(43), client_id: app.clientId, client_secret: app.clientSecret ?? '' }))
  t.equal(code.status, 400, 'a code with a NUL: 400')
  t.equal((await code.json()).error, 'invalid_grant', 'as any unknown code')
})

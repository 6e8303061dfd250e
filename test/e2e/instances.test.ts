import t from 'tap'
import { POSTGRES_SKIP_MESSAGE, TEST_DATABASE_URL, adminPool, onPostgres, postgresSchema } from '../fixtures/database.js'
import { startServer } from '../fixtures/process.js'

// Two real server processes on one PostgreSQL database, as behind a load balancer.
const skip = TEST_DATABASE_URL === undefined ? POSTGRES_SKIP_MESSAGE : !onPostgres && 'runs in the PostgreSQL pass'

interface Answer { status: number, body: any, refreshCookie?: string }

async function call (baseUrl: string, method: string, path: string, options: { body?: unknown, cookie?: string } = {}): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(options.cookie === undefined ? {} : { cookie: options.cookie })
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body)
  })
  const text = await response.text()
  const refreshCookie = response.headers.getSetCookie().find(line => line.startsWith('refreshToken='))
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), refreshCookie: refreshCookie?.split(';')[0].slice('refreshToken='.length) }
}

t.test('two instances on one database serve one set of users, sessions and keys', { skip }, async (t) => {
  const { schema, databaseUrl } = await postgresSchema(t)
  const environment = { API_VARIANT: 'cookie', DATABASE_URL: databaseUrl }
  // Started together: both migrate and look for a signing key at the same moment.
  const [first, second] = await Promise.all([startServer(t, environment), startServer(t, environment)])

  const jwks = await Promise.all([first, second].map(async ({ baseUrl }) => (await call(baseUrl, 'GET', '/.well-known/jwks.json')).body))
  // The service's Ed25519 key and the provider's RSA key (RS256 ID tokens), each made once however many instances ask at once.
  t.same(jwks[0].keys.map((key: { kty: string }) => key.kty).sort(), ['OKP', 'RSA'], 'one key of each kind')
  t.same(jwks[0], jwks[1], 'the signing keys, shared through the store')

  const registered = await call(first.baseUrl, 'POST', '/auth/register', { body: { first_name: 'Ada', last_name: 'Lovelace', username: 'ada', email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(registered.status, 201, 'register on the first')
  const duplicate = await call(second.baseUrl, 'POST', '/auth/register', { body: { first_name: 'A', last_name: 'L', username: 'ADA', email: 'other@example.com', password: 'analytical engine' } })
  t.match(duplicate, { status: 409, body: { code: 'USERNAME_TAKEN' } }, 'the second sees the username, ignoring case')

  const login = await call(second.baseUrl, 'POST', '/auth/login', { body: { email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(login.status, 200, 'log in on the second')
  const refreshed = await call(first.baseUrl, 'POST', '/auth/refresh-token', { cookie: `refreshToken=${login.refreshCookie}` })
  t.equal(refreshed.status, 200, 'refresh on the first')
  t.ok(refreshed.refreshCookie, 'the refresh token rotated')
  const read = await call(second.baseUrl, 'GET', `/users/${registered.body.id}`, { cookie: `accessToken=${refreshed.body.accessToken}` })
  t.same(read, { status: 200, body: registered.body, refreshCookie: undefined }, 'read on the second with the first\'s access token')

  // 50 tabs refresh at once with one token, spread over both instances.
  const answers = await Promise.all(Array.from({ length: 50 }, (_, index) =>
    call(index % 2 === 0 ? first.baseUrl : second.baseUrl, 'POST', '/auth/refresh-token', { cookie: `refreshToken=${refreshed.refreshCookie}` })))
  t.same(answers.map(answer => answer.status), Array(50).fill(200), 'every tab gets an access token (grace period)')
  t.equal(answers.filter(answer => answer.refreshCookie !== undefined).length, 1, 'exactly one new refresh token')

  const live = await adminPool().query(`select count(*)::int as tokens, count(distinct family_id)::int as families
    from "${schema}".refresh_tokens where rotated_at is null and revoked_at is null`)
  t.same(live.rows[0], { tokens: 1, families: 1 }, 'one live session family with one live token')
  const all = await adminPool().query(`select count(*)::int as tokens from "${schema}".refresh_tokens`)
  t.equal(all.rows[0].tokens, 3, 'the login token, its successor and one more: no lost or doubled rotation')
})

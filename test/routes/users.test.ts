import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { credentials, loggedInUser, registerUser } from '../fixtures/factories.js'

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: GET /users/:userId`, async (t) => {
    t.test('answers the user itself', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const response = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(variant, session) })
      t.equal(response.statusCode, 200)
      const expected: Record<string, unknown> = { id: session.user.id, first_name: 'Ada', last_name: 'Lovelace', email: session.user.email }
      if (variant === 'cookie') expected.username = session.user.body.username
      t.same(response.json(), expected, 'no password, no hash')
    })

    t.test('needs only the access token', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const onlyAccess = variant === 'header'
        ? { headers: { authorization: `Bearer ${session.accessToken}` } }
        : { cookies: { accessToken: session.accessToken } }
      t.equal((await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...onlyAccess })).statusCode, 200)
    })

    t.test('another user\'s id is 403, existing or not', async (t) => {
      const server = await build(t, { variant })
      const other = await registerUser(server, variant)
      const session = await loggedInUser(server, variant)
      assertError(t, await server.inject({ method: 'GET', url: `/users/${other.id}`, ...credentials(variant, session) }), 403, 'FORBIDDEN')
      assertError(t, await server.inject({ method: 'GET', url: '/users/999999', ...credentials(variant, session) }), 403, 'FORBIDDEN')
    })

    t.test('without a token is 401 MISSING_TOKEN', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      assertError(t, await server.inject({ method: 'GET', url: `/users/${session.user.id}` }), 401, 'MISSING_TOKEN')
    })

    t.test('with a garbled or forged token is 401 INVALID_TOKEN', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const [header, payload, signature] = session.accessToken.split('.')
      const otherUser = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: '2' })).toString('base64url')
      for (const accessToken of ['garbage', `${header}.${otherUser}.${signature}`, `${header}.${payload}.${'A'.repeat(signature.length)}`]) {
        const response = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(variant, { accessToken, refreshToken: session.refreshToken }) })
        assertError(t, response, 401, 'INVALID_TOKEN')
      }
    })

    t.test('a non-numeric id is 400', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      assertError(t, await server.inject({ method: 'GET', url: '/users/abc', ...credentials(variant, session) }), 400, 'VALIDATION_FAILED')
      assertError(t, await server.inject({ method: 'GET', url: '/users/0', ...credentials(variant, session) }), 400, 'VALIDATION_FAILED')
    })
  })
}

t.test('cookie variant: PATCH /users/:userId', async (t) => {
  const variant = 'cookie'

  t.test('updates some fields, answers 204 with no body, and GET shows the change', async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const url = `/users/${session.user.id}`
    const response = await server.inject({ method: 'PATCH', url, ...credentials(variant, session), payload: { first_name: ' Augusta ', username: 'countess' } })
    t.equal(response.statusCode, 204)
    t.equal(response.body, '')
    const read = await server.inject({ method: 'GET', url, ...credentials(variant, session) })
    t.match(read.json(), { first_name: 'Augusta', last_name: 'Lovelace', username: 'countess', email: session.user.email })
  })

  t.test('a changed email is the one to log in with', async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const patch = await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, ...credentials(variant, session), payload: { email: 'New@Example.com' } })
    t.equal(patch.statusCode, 204)
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'new@example.com', password: session.user.password } })
    t.equal(login.statusCode, 200)
    t.equal(login.json().user.email, 'new@example.com')
  })

  t.test('unknown fields, the password included, are 400 and change nothing', async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const url = `/users/${session.user.id}`
    for (const payload of [{ password: 'a new password!' }, { first_name: 'Augusta', role: 'admin' }, {}]) {
      assertError(t, await server.inject({ method: 'PATCH', url, ...credentials(variant, session), payload }), 400, 'VALIDATION_FAILED')
    }
    t.equal((await server.inject({ method: 'GET', url, ...credentials(variant, session) })).json().first_name, 'Ada')
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })
    t.equal(login.statusCode, 200, 'the password is unchanged')
  })

  t.test('an email or username of another user is 409 and changes nothing', async (t) => {
    const server = await build(t, { variant })
    const other = await registerUser(server, variant, { username: 'grace' })
    const session = await loggedInUser(server, variant)
    const url = `/users/${session.user.id}`
    assertError(t, await server.inject({ method: 'PATCH', url, ...credentials(variant, session), payload: { email: other.email, first_name: 'X' } }), 409, 'EMAIL_TAKEN')
    assertError(t, await server.inject({ method: 'PATCH', url, ...credentials(variant, session), payload: { username: 'GRACE' } }), 409, 'USERNAME_TAKEN')
    t.equal((await server.inject({ method: 'GET', url, ...credentials(variant, session) })).json().first_name, 'Ada')
  })

  t.test('invalid values are 400', async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const url = `/users/${session.user.id}`
    for (const payload of [{ email: 'not-an-email' }, { username: 'a b' }, { username: 'ab' }, { first_name: '   ' }, { last_name: 'x'.repeat(101) }, { first_name: 42 }, { first_name: null }]) {
      assertError(t, await server.inject({ method: 'PATCH', url, ...credentials(variant, session), payload }), 400, 'VALIDATION_FAILED')
    }
  })

  t.test('another user\'s id is 403 and changes nothing', async (t) => {
    const server = await build(t, { variant })
    const victim = await loggedInUser(server, variant)
    const attacker = await loggedInUser(server, variant)
    const response = await server.inject({ method: 'PATCH', url: `/users/${victim.user.id}`, ...credentials(variant, attacker), payload: { first_name: 'Mallory' } })
    assertError(t, response, 403, 'FORBIDDEN')
    t.equal((await server.inject({ method: 'GET', url: `/users/${victim.user.id}`, ...credentials(variant, victim) })).json().first_name, 'Ada')
  })

  t.test('a user registered through the header variant has a null username until it sets one', async (t) => {
    const server = await build(t, { mounts: [{ variant: 'header', prefix: '/a' }, { variant: 'cookie', prefix: '/b' }] })
    const headerUser = await registerUser(server, 'header', {}, '/a')
    const login = await server.inject({ method: 'POST', url: '/b/auth/login', payload: { email: headerUser.email, password: headerUser.password } })
    t.equal(login.json().user.username, null)
    const cookies = { accessToken: login.json().accessToken }
    t.equal((await server.inject({ method: 'PATCH', url: `/b/users/${headerUser.id}`, cookies, payload: { username: 'ada' } })).statusCode, 204)
    t.equal((await server.inject({ method: 'GET', url: `/b/users/${headerUser.id}`, cookies })).json().username, 'ada')
    const headerLogin = await server.inject({ method: 'POST', url: '/a/auth/login', payload: { email: headerUser.email, password: headerUser.password } })
    t.notOk('username' in headerLogin.json().user, 'the header variant never shows it')
  })
})

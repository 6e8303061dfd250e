import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { newUserBody, registerUser } from '../fixtures/factories.js'

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: register and login`, async (t) => {
    t.test('the email is trimmed and lower-cased, the names trimmed', async (t) => {
      const server = await build(t, { variant })
      const response = await server.inject({
        method: 'POST',
        url: '/auth/register',
        payload: newUserBody(variant, { email: '  Ada.Lovelace@Example.COM ', first_name: '  Ada ', last_name: ' King ' })
      })
      t.equal(response.statusCode, 201)
      t.match(response.json(), { email: 'ada.lovelace@example.com', first_name: 'Ada', last_name: 'King' })
      const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'ADA.LOVELACE@example.com ', password: 'analytical engine 1843' } })
      t.equal(login.statusCode, 200, 'login matches the email in any case')
    })

    t.test('an email already registered, in any case, is 409 EMAIL_TAKEN', async (t) => {
      const server = await build(t, { variant })
      const first = await registerUser(server, variant)
      const response = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody(variant, { email: first.email.toUpperCase() }) })
      assertError(t, response, 409, 'EMAIL_TAKEN')
    })

    t.test('concurrent registrations of one email: exactly one 201, the rest 409', async (t) => {
      const server = await build(t, { variant })
      const responses = await Promise.all(Array.from({ length: 10 }, (_, index) =>
        server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody(variant, { email: 'race@example.com', ...(variant === 'cookie' ? { username: `racer_${index}` } : {}) }) })))
      const statuses = responses.map(response => response.statusCode).sort()
      t.same(statuses, [201, ...Array(9).fill(409)])
    })

    t.test('bad register bodies are 400 and create nothing', async (t) => {
      const server = await build(t, { variant })
      const bad: Array<Record<string, unknown>> = [
        { email: 'not-an-email' },
        { password: 'short' },
        { password: 'x'.repeat(257) },
        { first_name: '' },
        { first_name: '   ' },
        { last_name: 'x'.repeat(101) },
        { first_name: 123 },
        { is_admin: true }
      ]
      for (const fields of bad) {
        const payload = { ...newUserBody(variant, { email: 'same@example.com' }), ...fields }
        assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload }), 400, 'VALIDATION_FAILED')
      }
      const { password, ...withoutPassword } = newUserBody(variant)
      t.ok(password)
      assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload: withoutPassword }), 400, 'VALIDATION_FAILED')
      const good = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody(variant, { email: 'same@example.com' }) })
      t.equal(good.statusCode, 201, 'nothing was stored by the refused attempts')
      t.equal(good.json().id, 1)
    })

    t.test('a wrong password and an unknown email get the same 401 body', async (t) => {
      const server = await build(t, { variant })
      const user = await registerUser(server, variant)
      const wrongPassword = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'not the password' } })
      const unknownEmail = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'nobody@example.com', password: user.password } })
      assertError(t, wrongPassword, 401, 'INVALID_CREDENTIALS')
      assertError(t, unknownEmail, 401, 'INVALID_CREDENTIALS')
      t.equal(wrongPassword.body, unknownEmail.body)
      t.same(wrongPassword.cookies, [], 'no cookies for a failed login')
    })

    t.test('login with a missing field is 400', async (t) => {
      const server = await build(t, { variant })
      assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'a@example.com' } }), 400, 'VALIDATION_FAILED')
      assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: [] }), 400, 'VALIDATION_FAILED')
    })

    t.test('each login starts its own session', async (t) => {
      const server = await build(t, { variant })
      const user = await registerUser(server, variant)
      const payload = { email: user.email, password: user.password }
      const first = await server.inject({ method: 'POST', url: '/auth/login', payload })
      const second = await server.inject({ method: 'POST', url: '/auth/login', payload })
      const sessionOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sid
      t.not(sessionOf(first.json().accessToken), sessionOf(second.json().accessToken))
    })
  })
}

t.test('the access token carries the contract\'s claims and header', async (t) => {
  const server = await build(t, { variant: 'header', env: { JWT_ISSUER: 'https://accounts.example.com', JWT_AUDIENCE: 'example-apis' } })
  const user = await registerUser(server, 'header')
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  const [header, payload] = login.json().accessToken.split('.').slice(0, 2).map((part: string) => JSON.parse(Buffer.from(part, 'base64url').toString()))
  t.match(header, { alg: 'EdDSA', kid: /^[\w-]{43}$/ })
  t.match(payload, { sub: String(user.id), iss: 'https://accounts.example.com', aud: 'example-apis', sid: /^[0-9a-f-]{36}$/ })
  t.equal(payload.exp - payload.iat, 900, 'ACCESS_TOKEN_TTL defaults to 15 minutes')
})

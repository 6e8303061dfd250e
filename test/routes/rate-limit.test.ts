import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { newUserBody, registerUser } from '../fixtures/factories.js'

t.test('repeated logins to one account are 429 with Retry-After; other accounts are unaffected', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '3' } })
  const user = await registerUser(server, 'cookie')
  const wrong = { email: user.email, password: 'not the password' }
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: wrong })).statusCode, 401)
  }
  const limited = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email.toUpperCase(), password: user.password } })
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.match(limited.headers['retry-after'], /^\d+$/)
  const other = await registerUser(server, 'cookie')
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: other.email, password: other.password } })).statusCode, 200)
})

t.test('registrations from one address are limited', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGISTER_MAX: '2' } })
  await registerUser(server, 'cookie')
  await registerUser(server, 'cookie')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie') }), 429, 'RATE_LIMITED')
})

t.test('RATE_LIMIT_ENABLED=false turns the limits off', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_LOGIN_MAX: '1' } })
  const user = await registerUser(server, 'cookie')
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200)
  }
})

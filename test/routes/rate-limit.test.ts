import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { newUserBody, registerUser } from '../fixtures/factories.js'

t.test('failed logins to one account end in 429 with Retry-After, even for the right password; other accounts are unaffected', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '3' } })
  const user = await registerUser(server, 'cookie')
  const wrong = { email: user.email, password: 'not the password' }
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: wrong })).statusCode, 401)
  }
  const limited = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email.toUpperCase(), password: user.password } })
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.match(limited.headers['retry-after'], /^[1-9]\d*$/)
  t.ok(Number(limited.headers['retry-after']) <= 60, 'at most the window')
  const other = await registerUser(server, 'cookie')
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: other.email, password: other.password } })).statusCode, 200)
})

t.test('unknown emails are throttled like known ones', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '2' } })
  const payload = { email: 'nobody@example.com', password: 'whatever1' }
  for (let attempt = 0; attempt < 2; attempt++) t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload })).statusCode, 401)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload }), 429, 'RATE_LIMITED')
})

t.test('successful logins are never throttled, and one clears earlier failures', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '2' } })
  const user = await registerUser(server, 'cookie')
  const right = { email: user.email, password: user.password }
  const wrong = { email: user.email, password: 'not the password' }
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: wrong })).statusCode, 401)
  for (let attempt = 0; attempt < 5; attempt++) t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: right })).statusCode, 200)
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: wrong })).statusCode, 401, 'the count started again')
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: right })).statusCode, 200)
})

t.test('the window ends: after it, logins are tried again', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '1', RATE_LIMIT_WINDOW: '1s' } })
  const user = await registerUser(server, 'cookie')
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'nope nope' } })).statusCode, 401)
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 429)
  await new Promise(resolve => setTimeout(resolve, 1100))
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200)
})

t.test('registrations from one address are limited', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGISTER_MAX: '2' } })
  await registerUser(server, 'cookie')
  await registerUser(server, 'cookie')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie') }), 429, 'RATE_LIMITED')
})

t.test('RATE_LIMIT_ENABLED=false turns the limits off', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_LOGIN_MAX: '1', RATE_LIMIT_REGISTER_MAX: '1' } })
  const user = await registerUser(server, 'cookie')
  await registerUser(server, 'cookie')
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'wrong password' } })).statusCode, 401)
  }
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200)
})

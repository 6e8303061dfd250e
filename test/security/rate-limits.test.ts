import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { newUserBody, registerUser } from '../fixtures/factories.js'

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))
const limits = (env: Record<string, string>) => ({ env: { RATE_LIMIT_ENABLED: 'true', ...env } })

async function login (server: FastifyInstance, email: string, password: string, remoteAddress = '127.0.0.1') {
  return await server.inject({ method: 'POST', url: '/auth/login', payload: { email, password }, remoteAddress })
}

t.test('logins from one address are limited per window, with Retry-After; other addresses are not', async (t) => {
  const server = await build(t, limits({ RATE_LIMIT_LOGIN_MAX: '3' }))
  const user = await registerUser(server, 'cookie')
  for (let attempt = 0; attempt < 3; attempt++) t.equal((await login(server, user.email, user.password, '10.0.0.1')).statusCode, 200)
  const limited = await login(server, user.email, user.password, '10.0.0.1')
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.match(limited.headers['retry-after'], /^[1-9]\d*$/)
  t.equal((await login(server, user.email, user.password, '10.0.0.2')).statusCode, 200, 'another address logs in')
})

t.test('registrations from one address are limited per window, with Retry-After', async (t) => {
  const server = await build(t, limits({ RATE_LIMIT_REGISTER_MAX: '2' }))
  await registerUser(server, 'cookie')
  await registerUser(server, 'cookie')
  const limited = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie') })
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.match(limited.headers['retry-after'], /^[1-9]\d*$/)
})

t.test('failed logins lock the account from every address, the right password included; other accounts go on', async (t) => {
  const server = await build(t, limits({ RATE_LIMIT_LOGIN_FAILURES: '3', RATE_LIMIT_LOCKOUT: '30s' }))
  const user = await registerUser(server, 'cookie')
  // A distributed guess: each try from another address, so no per-address limit catches it.
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await login(server, user.email, `wrong guess ${attempt}`, `10.0.1.${attempt}`)).statusCode, 401)
  }
  const locked = await login(server, user.email.toUpperCase(), user.password, '10.0.2.1')
  assertError(t, locked, 429, 'RATE_LIMITED')
  // 30 s from the third failure, which may be a second ago on a loaded machine.
  t.ok(['29', '30'].includes(String(locked.headers['retry-after'])), `Retry-After is the lockout: ${locked.headers['retry-after']}`)
  const other = await registerUser(server, 'cookie')
  t.equal((await login(server, other.email, other.password, '10.0.2.1')).statusCode, 200)
})

t.test('each failure after a lockout doubles the next one (exponential backoff), up to the maximum', async (t) => {
  const server = await build(t, limits({ RATE_LIMIT_LOGIN_FAILURES: '2', RATE_LIMIT_LOCKOUT: '1s', RATE_LIMIT_LOCKOUT_MAX: '2s' }))
  const user = await registerUser(server, 'cookie')
  for (let attempt = 0; attempt < 2; attempt++) t.equal((await login(server, user.email, 'wrong guess')).statusCode, 401)
  t.equal((await login(server, user.email, user.password)).headers['retry-after'], '1', 'first lockout: 1 s')
  await sleep(1100)
  t.equal((await login(server, user.email, 'wrong guess')).statusCode, 401, 'the lockout ended; this guess failed')
  t.equal((await login(server, user.email, user.password)).headers['retry-after'], '2', 'second lockout: 2 s')
  await sleep(2100)
  t.equal((await login(server, user.email, 'wrong guess')).statusCode, 401)
  t.equal((await login(server, user.email, user.password)).headers['retry-after'], '2', 'capped at RATE_LIMIT_LOCKOUT_MAX')
  await sleep(2100)
  t.equal((await login(server, user.email, user.password)).statusCode, 200, 'the right password after the lockout')
  t.equal((await login(server, user.email, 'wrong guess')).statusCode, 401, 'a success cleared the count')
  t.equal((await login(server, user.email, user.password)).statusCode, 200)
})

t.test('unknown emails are locked like known ones, so the lockout tells nothing', async (t) => {
  const server = await build(t, limits({ RATE_LIMIT_LOGIN_FAILURES: '2' }))
  for (let attempt = 0; attempt < 2; attempt++) t.equal((await login(server, 'nobody@example.com', 'whatever1')).statusCode, 401)
  assertError(t, await login(server, 'nobody@example.com', 'whatever1'), 429, 'RATE_LIMITED')
})

t.test('RATE_LIMIT_ENABLED=false turns every limit off', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_LOGIN_MAX: '1', RATE_LIMIT_REGISTER_MAX: '1', RATE_LIMIT_LOGIN_FAILURES: '1' } })
  const user = await registerUser(server, 'cookie')
  await registerUser(server, 'cookie')
  for (let attempt = 0; attempt < 3; attempt++) t.equal((await login(server, user.email, 'wrong password')).statusCode, 401)
  t.equal((await login(server, user.email, user.password)).statusCode, 200)
})

t.test('a limited route tells how many tries are left: X-RateLimit-Limit, -Remaining and -Reset', async (t) => {
  const server = await build(t, limits({ RATE_LIMIT_LOGIN_MAX: '3', RATE_LIMIT_RECOVERY_MAX: '5', RATE_LIMIT_RECOVERY_ACCOUNT_MAX: '2' }))
  const user = await registerUser(server, 'cookie')
  const first = await login(server, user.email, user.password, '10.0.3.1')
  t.equal(first.headers['x-ratelimit-limit'], '3')
  t.equal(first.headers['x-ratelimit-remaining'], '2')
  t.match(first.headers['x-ratelimit-reset'], /^[1-9]\d*$/)
  // Two limits (per address, per account): the one nearest to its end is told.
  const forgot = () => server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: 'someone@example.com' }, remoteAddress: '10.0.3.2' })
  const asked = await forgot()
  t.equal(asked.statusCode, 202)
  t.equal(asked.headers['x-ratelimit-limit'], '2')
  t.equal(asked.headers['x-ratelimit-remaining'], '1')
  await forgot()
  const limited = await forgot()
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.equal(limited.headers['x-ratelimit-remaining'], '0')
  t.match(limited.headers['retry-after'], /^[1-9]\d*$/)
})

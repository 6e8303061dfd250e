import { randomBytes } from 'node:crypto'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { newUserBody } from '../fixtures/factories.js'

/** A Redis for the tests, e.g. redis://127.0.0.1:6379 (.ci/run sets it when one answers). */
const TEST_REDIS_URL = process.env.TEST_REDIS_URL
// The counters do not depend on the account store: one pass (SQLite) is enough.
const otherPass = process.env.TEST_STORE === 'postgres' && 'rate-limit counters are tested in the SQLite pass'
const skip = otherPass || (TEST_REDIS_URL === undefined && 'Redis tests skipped: TEST_REDIS_URL not set')

const register = (server: Awaited<ReturnType<typeof build>>) =>
  server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie') })

t.test('with REDIS_URL, two instances count registrations against one limit', { skip }, async (t) => {
  // A prefix of its own: other runs on the same Redis count apart.
  const env = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGISTER_MAX: '2', REDIS_URL: TEST_REDIS_URL as string, REDIS_KEY_PREFIX: `test-${randomBytes(6).toString('hex')}:` }
  const first = await build(t, { env })
  const second = await build(t, { env })
  t.equal((await register(first)).statusCode, 201)
  t.equal((await register(second)).statusCode, 201)
  const limited = await register(first)
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.match(limited.headers['retry-after'], /^[1-9][0-9]*$/)
  assertError(t, await register(second), 429, 'RATE_LIMITED')
  t.ok(first.hasDecorator('redis'), 'the client is shared with the service as fastify.redis')
})

t.test('without REDIS_URL, each instance counts on its own', { skip: otherPass }, async (t) => {
  const env = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGISTER_MAX: '2' }
  const first = await build(t, { env })
  const second = await build(t, { env })
  t.equal((await register(first)).statusCode, 201)
  t.equal((await register(second)).statusCode, 201)
  t.equal((await register(first)).statusCode, 201, 'the second registration on this instance')
  t.notOk(first.hasDecorator('redis'))
})

t.test('a Redis that does not answer leaves the limits off and the service serving', { skip: otherPass }, async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGISTER_MAX: '1', REDIS_URL: 'redis://127.0.0.1:1' } })
  t.equal((await register(server)).statusCode, 201)
  t.equal((await register(server)).statusCode, 201, 'over the limit, but no counter to check it against')
  t.equal((await server.inject({ method: 'GET', url: '/health' })).statusCode, 200)
})

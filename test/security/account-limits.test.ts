import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser, registerUser, type Session } from '../fixtures/factories.js'

/*
 * Findings 4 and 9 of the review: PATCH /users/:id answered 409 EMAIL_TAKEN as
 * often as asked (an oracle for which addresses have accounts) and mailed on
 * each success; change-password and deletion had no per-user limit; the
 * hashing queue was unbounded.
 */

const ACCOUNT_MAX = 3
const limited = (env: Record<string, string> = {}) => ({ variant: 'cookie' as const, env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_ACCOUNT_MAX: String(ACCOUNT_MAX), ...env } })

function assertLimited (t: Parameters<typeof assertError>[0], response: Awaited<ReturnType<FastifyInstance['inject']>>) {
  assertError(t, response, 429, 'RATE_LIMITED')
  t.match(response.headers['retry-after'], /^[1-9]\d*$/, 'with Retry-After')
}

t.test('PATCH /users/:id is limited per user: the EMAIL_TAKEN oracle answers RATE_LIMIT_ACCOUNT_MAX times, then 429', async (t) => {
  const server = await build(t, limited())
  const other = await registerUser(server, 'cookie')
  const session = await loggedInUser(server, 'cookie')
  const probe = () => server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, ...credentials('cookie', session), payload: { email: other.email } })
  for (let attempt = 0; attempt < ACCOUNT_MAX; attempt++) assertError(t, await probe(), 409, 'EMAIL_TAKEN')
  assertLimited(t, await probe())
  const another = await loggedInUser(server, 'cookie')
  t.equal((await server.inject({ method: 'PATCH', url: `/users/${another.user.id}`, ...credentials('cookie', another), payload: { first_name: 'Other' } })).statusCode, 204, 'another user is not limited')
})

t.test('change-password, account deletion and re-authentication are limited per user', async (t) => {
  const server = await build(t, limited({ RATE_LIMIT_LOGIN_FAILURES: '100' }))
  const session: Session = await loggedInUser(server, 'cookie')
  const routes = [
    { method: 'POST' as const, url: '/auth/change-password', payload: { current_password: 'wrong guess', new_password: 'a brand new secret' } },
    { method: 'DELETE' as const, url: `/users/${session.user.id}`, payload: { password: 'wrong guess' } },
    { method: 'POST' as const, url: '/auth/reauthenticate', payload: { password: 'wrong guess' } }
  ]
  for (const route of routes) {
    for (let attempt = 0; attempt < ACCOUNT_MAX; attempt++) {
      assertError(t, await server.inject({ ...route, ...credentials('cookie', session) }), 401, 'INVALID_CREDENTIALS')
    }
    assertLimited(t, await server.inject({ ...route, ...credentials('cookie', session) }))
  }
})

t.test('past PASSWORD_HASH_QUEUE_MAX waiting hashes, logins answer 503 BUSY with Retry-After, and the service goes on', async (t) => {
  const server = await build(t, { variant: 'header', env: { PASSWORD_HASH_QUEUE_MAX: '1' } })
  const user = await registerUser(server, 'header')
  const answers = await Promise.all(Array.from({ length: 20 }, () =>
    server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })))
  const busy = answers.filter(answer => answer.statusCode === 503)
  t.ok(busy.length > 0, `${busy.length} of 20 were refused`)
  t.ok(answers.every(answer => answer.statusCode === 200 || answer.statusCode === 503), 'nothing but 200 and 503')
  for (const answer of busy) {
    assertError(t, answer, 503, 'BUSY')
    t.equal(answer.headers['retry-after'], '1')
  }
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200, 'a login after the burst goes through')
})

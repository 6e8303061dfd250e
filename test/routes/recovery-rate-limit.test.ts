import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { credentials, loggedInUser, registerUser } from '../fixtures/factories.js'

const LIMITS_ON = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '100', RATE_LIMIT_REGISTER_MAX: '100' }

t.test('forgot-password is limited per account, and a limited known account answers as a limited unknown one', async (t) => {
  const server = await build(t, { variant: 'header', env: { ...LIMITS_ON, RATE_LIMIT_RECOVERY_ACCOUNT_MAX: '2', RATE_LIMIT_RECOVERY_MAX: '100' } })
  const user = await registerUser(server, 'header')
  const ask = (email: string) => server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email } })
  const answers: Record<string, Array<Awaited<ReturnType<typeof ask>>>> = { known: [], unknown: [] }
  for (let attempt = 0; attempt < 3; attempt++) {
    answers.known.push(await ask(user.email))
    answers.unknown.push(await ask('nobody@example.com'))
  }
  t.same(answers.known.map(answer => answer.statusCode), [202, 202, 429])
  t.same(answers.unknown.map(answer => answer.statusCode), [202, 202, 429])
  assertError(t, answers.known[2], 429, 'RATE_LIMITED')
  t.equal(answers.known[2].body, answers.unknown[2].body, 'the same body')
  t.equal(answers.known[2].headers['retry-after'], answers.unknown[2].headers['retry-after'])
  t.equal((await ask('someone-else@example.com')).statusCode, 202, 'other accounts are not held up')
})

t.test('forgot-password and reset-password are limited per client address', async (t) => {
  const server = await build(t, { variant: 'header', env: { ...LIMITS_ON, RATE_LIMIT_RECOVERY_MAX: '3' } })
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: `someone${attempt}@example.com` } })).statusCode, 202)
    assertError(t, await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token: `guess${attempt}`, new_password: 'a brand new secret' } }), 400, 'INVALID_RESET_TOKEN')
  }
  const limited = await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: 'someone-else@example.com' } })
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After')
  assertError(t, await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token: 'guess4', new_password: 'a brand new secret' } }), 429, 'RATE_LIMITED')
  const elsewhere = await server.inject({ method: 'POST', url: '/auth/forgot-password', remoteAddress: '10.0.0.2', payload: { email: 'someone@example.com' } })
  t.equal(elsewhere.statusCode, 202, 'another address is not held up')
})

t.test('resend-verification is limited per account', async (t) => {
  const server = await build(t, { variant: 'cookie', env: { ...LIMITS_ON, RATE_LIMIT_RECOVERY_ACCOUNT_MAX: '2' } })
  const session = await loggedInUser(server, 'cookie')
  const resend = () => server.inject({ method: 'POST', url: '/auth/resend-verification', ...credentials('cookie', session) })
  t.equal((await resend()).statusCode, 202)
  t.equal((await resend()).statusCode, 202)
  assertError(t, await resend(), 429, 'RATE_LIMITED')
})

t.test('RATE_LIMIT_ENABLED=false turns these limits off', async (t) => {
  const server = await build(t, { variant: 'header', env: { RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_RECOVERY_ACCOUNT_MAX: '1', RATE_LIMIT_RECOVERY_MAX: '1' } })
  for (let attempt = 0; attempt < 5; attempt++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: 'someone@example.com' } })).statusCode, 202)
  }
})

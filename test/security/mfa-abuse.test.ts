import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { selectAll, testDatabaseUrl } from '../fixtures/database.js'
import { credentials, loggedInUser, registerUser, type RegisteredUser } from '../fixtures/factories.js'
import { awayFromStepEdge, codeAt, enableTotp, mfaToken, verify } from '../fixtures/mfa.js'

/*
 * The second step of a login against its abuses: replayed codes, parallel use of one code, used
 * recovery codes, guessing (five wrong codes void the mfa_token; the account lockout counts them),
 * codes from outside the drift window, stale mfa_tokens, and a wrong password that must not tell
 * an account with TOTP from any other.
 */

const variants = ['header', 'cookie'] as const

/** A registered user with TOTP on (confirmed through the API); the confirming code's step is used. */
async function userWithTotp (server: FastifyInstance, variant: 'header' | 'cookie') {
  const session = await loggedInUser(server, variant)
  return { user: session.user, session, ...await enableTotp(server, variant, session) }
}

/**
 * A user whose TOTP secret the test chose, confirmed through the store with no step used yet, so
 * that a code of the step before the server's is not a replay: for the drift window.
 */
async function userWithUnusedTotp (server: FastifyInstance, variant: 'header' | 'cookie'): Promise<{ user: RegisteredUser, secret: string }> {
  const user = await registerUser(server, variant)
  const secret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'
  const saved = await server.store.saveTotpSecret(user.id, secret, new Date())
  if (!saved || !await server.store.confirmTotp(user.id, 0, [], new Date())) throw new Error('TOTP not stored')
  return { user, secret }
}

for (const variant of variants) {
  t.test(`${variant} variant: a TOTP code already used is refused, the confirming code included`, async (t) => {
    const server = await build(t, { variant })
    const { user, secret, confirmingCode } = await userWithTotp(server, variant)
    assertError(t, await verify(server, await mfaToken(server, user), confirmingCode), 401, 'INVALID_MFA_CODE')
    const code = codeAt(secret, 1)
    t.equal((await verify(server, await mfaToken(server, user), code)).statusCode, 200)
    assertError(t, await verify(server, await mfaToken(server, user), code), 401, 'INVALID_MFA_CODE')
  })

  t.test(`${variant} variant: two verifies of one code at once, with two mfa_tokens: exactly one logs in`, async (t) => {
    const server = await build(t, { variant })
    const { user, secret } = await userWithTotp(server, variant)
    const tokens = [await mfaToken(server, user), await mfaToken(server, user), await mfaToken(server, user)]
    const code = codeAt(secret, 1)
    const answers = await Promise.all(tokens.map(token => verify(server, token, code)))
    t.same(answers.map(answer => answer.statusCode).sort(), [200, 401, 401])
    for (const answer of answers.filter(answer => answer.statusCode === 401)) assertError(t, answer, 401, 'INVALID_MFA_CODE')
  })

  t.test(`${variant} variant: one mfa_token with two good codes at once logs in once, and spends only the code that passed`, async (t) => {
    const server = await build(t, { variant })
    const { user, session, secret, recoveryCodes } = await userWithTotp(server, variant)
    const token = await mfaToken(server, user)
    const answers = await Promise.all([verify(server, token, codeAt(secret, 1)), verify(server, token, recoveryCodes[0])])
    t.same(answers.map(answer => answer.statusCode).sort(), [200, 401])
    const account = (await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })).json()
    t.equal(account.mfa.recovery_codes_left, answers[1].statusCode === 200 ? 9 : 10)
  })

  t.test(`${variant} variant: a recovery code works once, in any case and with or without hyphens`, async (t) => {
    const server = await build(t, { variant })
    const { user, session, recoveryCodes } = await userWithTotp(server, variant)
    const typed = recoveryCodes[3].toUpperCase().replaceAll('-', ' ')
    t.equal((await verify(server, await mfaToken(server, user), typed)).statusCode, 200)
    assertError(t, await verify(server, await mfaToken(server, user), recoveryCodes[3]), 401, 'INVALID_MFA_CODE')
    const parallel = await Promise.all([verify(server, await mfaToken(server, user), recoveryCodes[4]), verify(server, await mfaToken(server, user), recoveryCodes[4])])
    t.same(parallel.map(answer => answer.statusCode).sort(), [200, 401], 'used at once from two logins: once')
    const account = (await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })).json()
    t.equal(account.mfa.recovery_codes_left, 8)
    const other = await userWithTotp(server, variant)
    assertError(t, await verify(server, await mfaToken(server, other.user), recoveryCodes[5]), 401, 'INVALID_MFA_CODE')
  })

  t.test(`${variant} variant: after five wrong codes the mfa_token is void, the right code included`, async (t) => {
    const server = await build(t, { variant })
    const { user, secret } = await userWithTotp(server, variant)
    const token = await mfaToken(server, user)
    for (const wrong of ['000000', '123456', 'not-a-code', '999999', 'aaaa-bbbb-cccc']) {
      if (wrong === codeAt(secret, 1)) continue
      assertError(t, await verify(server, token, wrong), 401, 'INVALID_MFA_CODE')
    }
    assertError(t, await verify(server, token, codeAt(secret, 1)), 401, 'INVALID_MFA_TOKEN')
    t.equal((await verify(server, await mfaToken(server, user), codeAt(secret, 1))).statusCode, 200, 'a new login may try again')
  })

  t.test(`${variant} variant: the drift window is one step: codes one step early or late pass, two steps refused`, async (t) => {
    const server = await build(t, { variant })
    await awayFromStepEdge()
    for (const steps of [-2, 2]) {
      const { user, secret } = await userWithUnusedTotp(server, variant)
      assertError(t, await verify(server, await mfaToken(server, user), codeAt(secret, steps)), 401, 'INVALID_MFA_CODE')
    }
    for (const steps of [-1, 0, 1]) {
      const { user, secret } = await userWithUnusedTotp(server, variant)
      t.equal((await verify(server, await mfaToken(server, user), codeAt(secret, steps))).statusCode, 200, `${steps} step(s) away`)
    }
  })

  t.test(`${variant} variant: an mfa_token expires after MFA_TOKEN_TTL; an unknown one is refused alike`, async (t) => {
    // The server's clock stands still where the codes' clock (the real one) goes on: both must stay in
    // one time step for the whole test, or enableTotp's own wait for a step edge puts them a step apart
    // and "one step away" becomes two (it failed so once).
    await awayFromStepEdge(12_000)
    const clock = testClock()
    const server = await build(t, { variant, env: { MFA_TOKEN_TTL: '1s' }, clock })
    const { user, secret } = await userWithTotp(server, variant)
    const token = await mfaToken(server, user)
    clock.advance(1100)
    assertError(t, await verify(server, token, codeAt(secret, 1)), 401, 'INVALID_MFA_TOKEN')
    assertError(t, await verify(server, 'x'.repeat(43), codeAt(secret, 1)), 401, 'INVALID_MFA_TOKEN')
    const used = await mfaToken(server, user)
    t.equal((await verify(server, used, codeAt(secret, 1))).statusCode, 200)
    assertError(t, await verify(server, used, codeAt(secret, 1)), 401, 'INVALID_MFA_TOKEN') // single use
  })

  t.test(`${variant} variant: a wrong password of an account with TOTP is the same 401 as of any account`, async (t) => {
    const server = await build(t, { variant })
    const { user } = await userWithTotp(server, variant)
    const plain = await registerUser(server, variant)
    const answers = await Promise.all([user.email, plain.email, 'nobody@example.com'].map(email =>
      server.inject({ method: 'POST', url: '/auth/login', payload: { email, password: 'wrong password' } })))
    for (const answer of answers) {
      assertError(t, answer, 401, 'INVALID_CREDENTIALS')
      t.same(answer.cookies, [])
    }
    t.equal(answers[0].body, answers[1].body, 'byte for byte')
    t.equal(answers[0].body, answers[2].body)
  })
}

t.test('wrong codes count toward the account lockout; a right password does not clear them, a right code does', async (t) => {
  const server = await build(t, { variant: 'header', env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '3', RATE_LIMIT_LOCKOUT: '30s', RATE_LIMIT_ACCOUNT_MAX: '100' } })
  const { user, session, secret } = await userWithTotp(server, 'header')
  let token = await mfaToken(server, user)
  assertError(t, await verify(server, token, '000001'), 401, 'INVALID_MFA_CODE')
  assertError(t, await verify(server, token, '000002'), 401, 'INVALID_MFA_CODE')
  token = await mfaToken(server, user)
  assertError(t, await verify(server, token, '000003'), 401, 'INVALID_MFA_CODE')
  const locked = await verify(server, token, codeAt(secret, 1))
  assertError(t, locked, 429, 'RATE_LIMITED')
  t.ok(Number(locked.headers['retry-after']) > 0)
  assertError(t, await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } }), 429, 'RATE_LIMITED')
  const types = (await server.inject({ method: 'GET', url: '/auth/security-events', ...credentials('header', session) })).json().events.map((event: { type: string }) => event.type)
  t.same(types.slice(0, 4), ['account_locked', 'mfa_failed', 'mfa_failed', 'mfa_failed'])

  const fresh = await build(t, { variant: 'header', env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '3', RATE_LIMIT_ACCOUNT_MAX: '100' } })
  const other = await userWithTotp(fresh, 'header')
  const second = await mfaToken(fresh, other.user)
  assertError(t, await verify(fresh, second, '000001'), 401, 'INVALID_MFA_CODE')
  assertError(t, await verify(fresh, second, '000002'), 401, 'INVALID_MFA_CODE')
  t.equal((await verify(fresh, second, codeAt(other.secret, 1))).statusCode, 200)
  const again = await mfaToken(fresh, other.user)
  assertError(t, await verify(fresh, again, '000003'), 401, 'INVALID_MFA_CODE')
  // A passed code cleared the failures: two more, and still no lockout (without the clearing this would be 429).
  assertError(t, await verify(fresh, again, '000004'), 401, 'INVALID_MFA_CODE')
})

t.test('verify is limited per client address and per account', async (t) => {
  const server = await build(t, { variant: 'header', env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_FAILURES: '100', RATE_LIMIT_ACCOUNT_MAX: '2', RATE_LIMIT_LOGIN_MAX: '100' } })
  const { user } = await userWithTotp(server, 'header')
  const token = await mfaToken(server, user)
  const from = (remoteAddress: string) => server.inject({ method: 'POST', url: '/auth/mfa/verify', payload: { mfa_token: token, code: '000000' }, remoteAddress })
  assertError(t, await from('203.0.113.1'), 401, 'INVALID_MFA_CODE')
  assertError(t, await from('203.0.113.2'), 401, 'INVALID_MFA_CODE')
  assertError(t, await from('203.0.113.3'), 429, 'RATE_LIMITED') // per account, from any address

  const perAddress = await build(t, { variant: 'header', env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '2' } })
  const unknown = () => perAddress.inject({ method: 'POST', url: '/auth/mfa/verify', payload: { mfa_token: 'unknown', code: '000000' }, remoteAddress: '203.0.113.7' })
  assertError(t, await unknown(), 401, 'INVALID_MFA_TOKEN')
  assertError(t, await unknown(), 401, 'INVALID_MFA_TOKEN')
  assertError(t, await unknown(), 429, 'RATE_LIMITED') // per address
})

t.test('the TOTP secret is sealed with SIGNING_KEY_ENCRYPTION_KEY; recovery codes and mfa_tokens are stored only as hashes', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, SIGNING_KEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') } })
  const { user, secret, recoveryCodes } = await userWithTotp(server, 'header')
  const token = await mfaToken(server, user)
  const stored = await server.store.findTotp(user.id)
  t.match(stored?.secret, /^sealed:v1:/)
  t.notMatch(stored?.secret, secret)
  const codes = await selectAll<{ code_hash: string }>(t, databaseUrl, 'select code_hash from recovery_codes')
  t.equal(codes.length, 10)
  for (const { code_hash: hash } of codes) t.notOk(recoveryCodes.some(code => hash.includes(code) || hash.includes(code.replaceAll('-', ''))))
  const challenges = await selectAll<{ token_hash: string }>(t, databaseUrl, 'select token_hash from mfa_challenges')
  t.equal(challenges.length, 1)
  t.not(challenges[0].token_hash, token)
  t.equal((await verify(server, token, codeAt(secret, 1))).statusCode, 200, 'the sealed secret opens')
})

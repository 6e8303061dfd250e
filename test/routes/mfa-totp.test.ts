import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser, logIn, type Session } from '../fixtures/factories.js'
import { awayFromStepEdge, codeAt, enableTotp, mfaToken, verify } from '../fixtures/mfa.js'
import { decodePart } from '../fixtures/jwt.js'

const variants = ['header', 'cookie'] as const

for (const variant of variants) {
  t.test(`${variant} variant: TOTP setup answers a base32 secret and an otpauth URL with issuer and email; confirm answers ten recovery codes`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const account = async () => (await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })).json()
    t.same((await account()).mfa, { totp: false, passkeys: false, recovery_codes_left: 0 })

    await awayFromStepEdge()
    const setup = await server.inject({ method: 'POST', url: '/auth/mfa/totp', ...credentials(variant, session) })
    t.equal(setup.statusCode, 200)
    t.same(Object.keys(setup.json()).sort(), ['otpauth_url', 'secret'])
    const { secret, otpauth_url: url } = setup.json()
    t.match(secret, /^[A-Z2-7]{32}$/, '160 bits in base32')
    const parsed = new URL(url)
    t.equal(parsed.protocol, 'otpauth:')
    t.equal(parsed.host, 'totp')
    t.equal(decodeURIComponent(parsed.pathname), `/account-service:${session.user.email}`, 'issuer and email in the label')
    t.equal(parsed.searchParams.get('issuer'), 'account-service')
    t.equal(parsed.searchParams.get('secret'), secret)
    t.equal(parsed.searchParams.get('algorithm'), 'SHA1')
    t.equal(parsed.searchParams.get('digits'), '6')
    t.equal(parsed.searchParams.get('period'), '30')
    t.same((await account()).mfa, { totp: false, passkeys: false, recovery_codes_left: 0 }, 'inactive until confirmed')
    t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })).statusCode, 200,
      'an unconfirmed secret asks no login for a code')

    const again = await server.inject({ method: 'POST', url: '/auth/mfa/totp', ...credentials(variant, session) })
    const replaced = again.json().secret
    t.not(replaced, secret, 'calling again replaces the unconfirmed secret')
    const wrong = await server.inject({ method: 'POST', url: '/auth/mfa/totp/confirm', ...credentials(variant, session), payload: { code: codeAt(secret) } })
    assertError(t, wrong, 400, 'INVALID_MFA_CODE')

    const confirm = await server.inject({ method: 'POST', url: '/auth/mfa/totp/confirm', ...credentials(variant, session), payload: { code: codeAt(replaced) } })
    t.equal(confirm.statusCode, 200)
    t.same(Object.keys(confirm.json()), ['recovery_codes'])
    const codes: string[] = confirm.json().recovery_codes
    t.equal(codes.length, 10)
    t.equal(new Set(codes).size, 10, 'all different')
    for (const code of codes) t.match(code, /^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/)
    t.same((await account()).mfa, { totp: true, passkeys: false, recovery_codes_left: 10 })

    assertError(t, await server.inject({ method: 'POST', url: '/auth/mfa/totp', ...credentials(variant, session) }), 409, 'TOTP_ALREADY_ENABLED')
    assertError(t, await server.inject({ method: 'POST', url: '/auth/mfa/totp/confirm', ...credentials(variant, session), payload: { code: codeAt(replaced) } }),
      409, 'TOTP_SETUP_NOT_STARTED')
    assertError(t, await server.inject({ method: 'POST', url: '/auth/mfa/totp' }), 401, 'MISSING_TOKEN')
  })

  t.test(`${variant} variant: login of an account with TOTP answers 403 MFA_REQUIRED with an mfa_token and no token; verify answers the login body`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const { secret } = await enableTotp(server, variant, session)

    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })
    t.equal(login.statusCode, 403)
    const refused = login.json()
    t.same(Object.keys(refused), ['statusCode', 'code', 'error', 'message', 'mfa_token'])
    t.match(refused, { statusCode: 403, code: 'MFA_REQUIRED', error: 'Forbidden', message: String })
    t.match(refused.mfa_token, /^[A-Za-z0-9_-]{43}$/, 'opaque: 256 random bits')
    t.same(login.cookies, [], 'no cookie')
    t.equal(login.headers['cache-control'], 'no-store')

    // The confirming code's step is used: the next step's code (within the drift window) logs in.
    const verified = await verify(server, refused.mfa_token, codeAt(secret, 1))
    t.equal(verified.statusCode, 200, verified.body)
    const body = verified.json()
    const user: Record<string, unknown> = { id: session.user.id, first_name: 'Ada', last_name: 'Lovelace', email: session.user.email }
    if (variant === 'cookie') user.username = session.user.body.username
    if (variant === 'header') {
      t.same(Object.keys(body).sort(), ['accessToken', 'refreshToken', 'user'])
      t.same(verified.cookies, [], 'no cookies in the header variant')
    } else {
      t.same(Object.keys(body).sort(), ['accessToken', 'user'])
      const cookies = verified.cookies as Array<{ name: string, value: string, httpOnly?: boolean, sameSite?: string, path?: string }>
      t.same(cookies.map(cookie => cookie.name).sort(), ['accessToken', 'refreshToken'])
      for (const cookie of cookies) t.match(cookie, { httpOnly: true, sameSite: 'Strict' })
      t.equal(cookies.find(cookie => cookie.name === 'accessToken')?.value, body.accessToken)
      t.equal(cookies.find(cookie => cookie.name === 'refreshToken')?.path, '/auth')
    }
    t.same(body.user, user, 'the seed\'s user of the variant')
    t.equal(decodePart(body.accessToken, 1).sub, String(session.user.id))

    const next: Session = {
      user: session.user,
      accessToken: body.accessToken,
      refreshToken: variant === 'header' ? body.refreshToken : (verified.cookies as Array<{ name: string, value: string }>).find(cookie => cookie.name === 'refreshToken')?.value ?? '',
      response: verified
    }
    const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(variant, next) })
    t.equal(read.statusCode, 200, 'the tokens work')
    t.equal((await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, next) })).statusCode, 200)
    // A session begun by the second step counts as a password proof: a sensitive change needs no re-authentication.
    t.equal((await server.inject({ method: 'POST', url: '/auth/mfa/recovery-codes', ...credentials(variant, next) })).statusCode, 200)

    const events = (await server.inject({ method: 'GET', url: '/auth/security-events', ...credentials(variant, next) })).json().events.map((event: { type: string }) => event.type)
    t.same(events.slice(0, 3), ['recovery_codes_renewed', 'login', 'mfa_enabled'])
  })

  t.test(`${variant} variant: turning TOTP off and renewing recovery codes need a fresh session; off, the codes are gone and login asks for the password only`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const { secret, recoveryCodes } = await enableTotp(server, variant, session)
    const { sid } = decodePart(session.accessToken, 1)
    const account = async () => (await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })).json()

    await server.store.markSessionAuthenticated(sid, new Date(Date.now() - 11 * 60_000)) // past REAUTH_MAX_AGE (10m)
    assertError(t, await server.inject({ method: 'POST', url: '/auth/mfa/totp', ...credentials(variant, session) }), 403, 'REAUTHENTICATION_REQUIRED')
    assertError(t, await server.inject({ method: 'DELETE', url: '/auth/mfa/totp', ...credentials(variant, session) }), 403, 'REAUTHENTICATION_REQUIRED')
    assertError(t, await server.inject({ method: 'POST', url: '/auth/mfa/recovery-codes', ...credentials(variant, session) }), 403, 'REAUTHENTICATION_REQUIRED')
    t.same((await account()).mfa, { totp: true, passkeys: false, recovery_codes_left: 10 }, 'nothing changed')

    // With TOTP on, re-authentication takes the password and a code (test/security/reauthentication-factors.test.ts).
    const reauthenticate = await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload: { password: session.user.password, code: codeAt(secret, 1) } })
    t.equal(reauthenticate.statusCode, 204)
    const renewed = await server.inject({ method: 'POST', url: '/auth/mfa/recovery-codes', ...credentials(variant, session) })
    t.equal(renewed.statusCode, 200)
    const newCodes: string[] = renewed.json().recovery_codes
    t.equal(newCodes.length, 10)
    t.same(newCodes.filter(code => recoveryCodes.includes(code)), [], 'a new set')
    assertError(t, await verify(server, await mfaToken(server, session.user), recoveryCodes[0]), 401, 'INVALID_MFA_CODE')
    const withNew = await verify(server, await mfaToken(server, session.user), newCodes[0])
    t.equal(withNew.statusCode, 200, 'the old set is void, the new one works')

    const off = await server.inject({ method: 'DELETE', url: '/auth/mfa/totp', ...credentials(variant, session) })
    t.equal(off.statusCode, 204)
    t.equal(off.body, '')
    t.same((await account()).mfa, { totp: false, passkeys: false, recovery_codes_left: 0 }, 'recovery codes gone with it')
    t.equal((await server.inject({ method: 'DELETE', url: '/auth/mfa/totp', ...credentials(variant, session) })).statusCode, 204, 'idempotent')
    assertError(t, await server.inject({ method: 'POST', url: '/auth/mfa/recovery-codes', ...credentials(variant, session) }), 409, 'TOTP_NOT_ENABLED')
    const plain = await logIn(server, variant, session.user)
    t.ok(plain.accessToken, 'login asks for the password only')
    const types = (await server.inject({ method: 'GET', url: '/auth/security-events', ...credentials(variant, plain) })).json().events.map((event: { type: string }) => event.type)
    t.equal(types.filter((type: string) => type === 'mfa_disabled').length, 1, 'one mfa_disabled event (the second DELETE changed nothing)')
    t.ok(types.includes('recovery_code_used'))
  })
}

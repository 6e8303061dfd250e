import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import type { Variant } from '../../core/config.js'
import { assertError } from '../fixtures/assertions.js'
import { SoftwareCredential } from '../fixtures/authenticator.js'
import { build } from '../fixtures/build.js'
import { cookieValue, credentials, logIn, loggedInUser, registerUser, type Session, markEmailVerified } from '../fixtures/factories.js'

/*
 * Passkeys with a software authenticator (test/fixtures/authenticator.ts): real attestations and
 * assertions, signed with P-256, in both variants. The browser itself is test/e2e/passkeys.test.ts.
 * The service runs with the default PUBLIC_URL, http://localhost:3000: RP ID localhost.
 */

const VARIANTS: Variant[] = ['header', 'cookie']
const UUID = '00000000-0000-4000-8000-000000000000'

async function registrationOptions (server: FastifyInstance, variant: Variant, session: Session) {
  return await server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', ...credentials(variant, session) })
}

async function addPasskey (server: FastifyInstance, variant: Variant, session: Session, options: { name?: string, credential?: SoftwareCredential } = {}) {
  const credential = options.credential ?? new SoftwareCredential()
  const offered = await registrationOptions(server, variant, session)
  if (offered.statusCode !== 200) throw new Error(`registration options: ${offered.statusCode} ${offered.body}`)
  const payload = { ...credential.register(offered.json()), ...(options.name === undefined ? {} : { name: options.name }) }
  const created = await server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, session), payload })
  return { credential, created }
}

async function loginOptions (server: FastifyInstance, remoteAddress = '127.0.0.1') {
  const response = await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options', remoteAddress })
  return response.json()
}

async function passkeyLogin (server: FastifyInstance, payload: unknown, remoteAddress = '127.0.0.1') {
  return await server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: payload as object, remoteAddress })
}

/** A passkey step-up of the session: on an account with a second factor, adding a passkey needs a session that used one. */
async function stepUp (server: FastifyInstance, variant: Variant, session: Session, credential: SoftwareCredential) {
  const payload = credential.assert(await loginOptions(server)) as object
  const response = await server.inject({ method: 'POST', url: '/auth/passkeys/reauthenticate', ...credentials(variant, session), payload })
  if (response.statusCode !== 204) throw new Error(`passkey step-up: ${response.statusCode} ${response.body}`)
}

async function eventTypes (server: FastifyInstance, variant: Variant, session: Session): Promise<string[]> {
  const response = await server.inject({ method: 'GET', url: '/auth/security-events', ...credentials(variant, session) })
  return response.json().events.map((event: { type: string }) => event.type)
}

/** Runs `work` with the clock `ms` ahead, for `new Date()` and `Date.now()` alike (the challenge and freshness checks read them). */
async function withClockAhead<T> (ms: number, work: () => Promise<T>): Promise<T> {
  const RealDate = Date
  class LaterDate extends RealDate {
    constructor (...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + ms)
      else super(...(args as [number]))
    }

    static now () { return RealDate.now() + ms }
  }
  globalThis.Date = LaterDate as DateConstructor
  try {
    return await work()
  } finally {
    globalThis.Date = RealDate
  }
}

function sessionOf (variant: Variant, response: LightMyRequestResponse): { accessToken: string, refreshToken: string } {
  return variant === 'header'
    ? { accessToken: response.json().accessToken, refreshToken: response.json().refreshToken }
    : { accessToken: cookieValue(response, 'accessToken'), refreshToken: cookieValue(response, 'refreshToken') }
}

for (const variant of VARIANTS) {
  t.test(`${variant} variant`, async (t: Test) => {
    t.test('registration options ask for a discoverable credential of this site and exclude the user\'s passkeys', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const first = await registrationOptions(server, variant, session)
      t.equal(first.statusCode, 200)
      const options = first.json()
      t.match(options, {
        rp: { id: 'localhost', name: 'account-service' },
        user: { name: session.user.email, displayName: 'Ada Lovelace' },
        timeout: 300_000,
        attestation: 'none',
        authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
        excludeCredentials: []
      })
      t.match(options.challenge, /^[A-Za-z0-9_-]{43}$/, '256 random bits')
      t.ok(options.pubKeyCredParams.some((param: { alg: number }) => param.alg === -7), 'ES256 offered')

      const { credential, created } = await addPasskey(server, variant, session)
      t.equal(created.statusCode, 201)
      assertError(t, await registrationOptions(server, variant, session), 403, 'SECOND_FACTOR_REQUIRED')
      await stepUp(server, variant, session, credential)
      const again = (await registrationOptions(server, variant, session)).json()
      t.same(again.excludeCredentials, [{ id: credential.id, type: 'public-key', transports: ['internal'] }], 'the passkey registered is excluded')
      t.not(again.challenge, options.challenge, 'a new challenge each time')
    })

    t.test('a passkey is added, listed, renamed and removed; the events say so', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { created, credential } = await addPasskey(server, variant, session, { name: '  Work laptop  ' })
      t.equal(created.statusCode, 201)
      await stepUp(server, variant, session, credential)
      const passkey = created.json()
      t.same(Object.keys(passkey).sort(), ['created_at', 'id', 'name'])
      t.equal(passkey.name, 'Work laptop', 'the name is trimmed')
      const unnamed = (await addPasskey(server, variant, session)).created.json()
      t.equal(unnamed.name, 'Passkey', 'a default name')

      const account = await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, session) })
      t.same(account.json().mfa, { totp: false, passkeys: true, recovery_codes_left: 0 }, 'the account says it has passkeys')
      const list = await server.inject({ method: 'GET', url: '/auth/passkeys', ...credentials(variant, session) })
      t.equal(list.statusCode, 200)
      // The first one was used for the step-up.
      t.match(list.json(), { passkeys: [{ ...passkey, last_used_at: String }, { ...unnamed, last_used_at: null }] })
      t.equal(list.json().passkeys.length, 2)

      const renamed = await server.inject({ method: 'PATCH', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session), payload: { name: 'Phone' } })
      t.equal(renamed.statusCode, 200)
      t.match(renamed.json(), { ...passkey, name: 'Phone', last_used_at: String })
      assertError(t, await server.inject({ method: 'PATCH', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session), payload: { name: '   ' } }), 400, 'VALIDATION_FAILED')
      assertError(t, await server.inject({ method: 'PATCH', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session), payload: { name: 'x', counter: 9 } }), 400, 'VALIDATION_FAILED')

      const removed = await server.inject({ method: 'DELETE', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session) })
      t.equal(removed.statusCode, 204)
      t.equal(removed.body, '')
      const after = await server.inject({ method: 'GET', url: '/auth/passkeys', ...credentials(variant, session) })
      t.same(after.json().passkeys.map((entry: { id: string }) => entry.id), [unnamed.id])
      assertError(t, await server.inject({ method: 'DELETE', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session) }), 404, 'PASSKEY_NOT_FOUND')
      t.same(await eventTypes(server, variant, session), ['passkey_removed', 'passkey_added', 'reauthenticated', 'passkey_added', 'login'])
    })

    t.test('another user\'s passkey is 404, as one that never was, and is not listed', async (t) => {
      const server = await build(t, { variant })
      const owner = await loggedInUser(server, variant)
      const stranger = await loggedInUser(server, variant)
      const passkey = (await addPasskey(server, variant, owner)).created.json()
      for (const id of [passkey.id, UUID]) {
        assertError(t, await server.inject({ method: 'PATCH', url: `/auth/passkeys/${id}`, ...credentials(variant, stranger), payload: { name: 'mine now' } }), 404, 'PASSKEY_NOT_FOUND')
        assertError(t, await server.inject({ method: 'DELETE', url: `/auth/passkeys/${id}`, ...credentials(variant, stranger) }), 404, 'PASSKEY_NOT_FOUND')
      }
      t.same((await server.inject({ method: 'GET', url: '/auth/passkeys', ...credentials(variant, stranger) })).json(), { passkeys: [] })
      const ownList = (await server.inject({ method: 'GET', url: '/auth/passkeys', ...credentials(variant, owner) })).json()
      t.same(ownList.passkeys.map((entry: { name: string }) => entry.name), ['Passkey'], 'the owner\'s passkey is untouched')
      assertError(t, await server.inject({ method: 'DELETE', url: '/auth/passkeys/not-a-uuid', ...credentials(variant, owner) }), 400, 'VALIDATION_FAILED')
    })

    t.test('the passkey routes of a user need its access token', async (t) => {
      const server = await build(t, { variant })
      for (const [method, url] of [['POST', '/auth/passkeys/registration-options'], ['POST', '/auth/passkeys'], ['GET', '/auth/passkeys'], ['PATCH', `/auth/passkeys/${UUID}`], ['DELETE', `/auth/passkeys/${UUID}`]] as const) {
        assertError(t, await server.inject({ method, url, payload: method === 'POST' || method === 'PATCH' ? {} : undefined }), 401, 'MISSING_TOKEN')
      }
    })

    t.test('adding and removing a passkey need a fresh session (REAUTH_MAX_AGE); re-authentication makes it fresh again', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const added = await addPasskey(server, variant, session)
      const passkey = added.created.json()
      // 11 minutes on: past the default REAUTH_MAX_AGE (10m), within the access token's 15.
      await withClockAhead(11 * 60_000, async () => {
        assertError(t, await registrationOptions(server, variant, session), 403, 'REAUTHENTICATION_REQUIRED')
        assertError(t, await server.inject({ method: 'DELETE', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session) }), 403, 'REAUTHENTICATION_REQUIRED')
        t.equal((await server.inject({ method: 'GET', url: '/auth/passkeys', ...credentials(variant, session) })).statusCode, 200, 'listing needs no fresh session')
        t.equal((await server.inject({ method: 'PATCH', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session), payload: { name: 'Renamed' } })).statusCode, 200, 'nor renaming')
        const reauth = await server.inject({ method: 'POST', url: '/auth/reauthenticate', ...credentials(variant, session), payload: { password: session.user.password } })
        t.equal(reauth.statusCode, 204)
        // Fresh, but with the password alone: another passkey needs the one there is (issue 33, finding 3).
        assertError(t, await registrationOptions(server, variant, session), 403, 'SECOND_FACTOR_REQUIRED')
        await stepUp(server, variant, session, added.credential)
        t.equal((await registrationOptions(server, variant, session)).statusCode, 200)
        t.equal((await server.inject({ method: 'DELETE', url: `/auth/passkeys/${passkey.id}`, ...credentials(variant, session) })).statusCode, 204)
      })
    })

    t.test('a registration challenge is single use, the asking user\'s only, and expires after 5 minutes', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const stranger = await loggedInUser(server, variant)
      const post = (who: Session, payload: object) => server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, who), payload })

      const options = (await registrationOptions(server, variant, session)).json()
      assertError(t, await post(stranger, new SoftwareCredential().register(options)), 400, 'INVALID_PASSKEY_REGISTRATION')
      const first = new SoftwareCredential()
      t.equal((await post(session, first.register(options))).statusCode, 201, 'another user could not use it up')
      assertError(t, await post(session, new SoftwareCredential().register(options)), 400, 'INVALID_PASSKEY_REGISTRATION')
      await stepUp(server, variant, session, first)

      const late = (await registrationOptions(server, variant, session)).json()
      await withClockAhead(5 * 60_000 + 1000, async () => {
        assertError(t, await post(session, new SoftwareCredential().register(late)), 400, 'INVALID_PASSKEY_REGISTRATION')
      })
      const inTime = (await registrationOptions(server, variant, session)).json()
      await withClockAhead(4 * 60_000, async () => {
        t.equal((await post(session, new SoftwareCredential().register(inTime))).statusCode, 201, 'within 5 minutes it works')
      })
    })

    t.test('a registration made on another origin, or of a credential already registered, is refused', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const post = (payload: object) => server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, session), payload })
      const options = (await registrationOptions(server, variant, session)).json()
      assertError(t, await post(new SoftwareCredential().register(options, { origin: 'https://evil.example' })), 400, 'INVALID_PASSKEY_REGISTRATION')

      const { credential } = await addPasskey(server, variant, session)
      const stranger = await loggedInUser(server, variant)
      const strangerOptions = (await registrationOptions(server, variant, stranger)).json()
      const copy = credential.register(strangerOptions)
      assertError(t, await server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, stranger), payload: copy }), 409, 'PASSKEY_ALREADY_REGISTERED')
      assertError(t, await post({ id: 'x' }), 400, 'VALIDATION_FAILED')
    })

    t.test('login options are for discoverable credentials, need no session and require user verification', async (t) => {
      const server = await build(t, { variant })
      const response = await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })
      t.equal(response.statusCode, 200)
      t.match(response.json(), { rpId: 'localhost', allowCredentials: [], userVerification: 'required', timeout: 300_000 })
      t.match(response.json().challenge, /^[A-Za-z0-9_-]{43}$/)
    })

    t.test('a passkey alone logs in: the login answer of the variant, a session that reads the user and is fresh', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { credential, created } = await addPasskey(server, variant, session)
      const login = await passkeyLogin(server, credential.assert(await loginOptions(server)))
      t.equal(login.statusCode, 200, login.body)
      const body = login.json()
      const userId = session.user.id
      if (variant === 'header') {
        t.same(Object.keys(body).sort(), ['accessToken', 'refreshToken', 'user'])
        t.same(body.user, { id: userId, first_name: 'Ada', last_name: 'Lovelace', email: session.user.email })
      } else {
        t.same(Object.keys(body).sort(), ['accessToken', 'user'])
        t.same(body.user, { id: userId, first_name: 'Ada', last_name: 'Lovelace', username: session.user.body.username, email: session.user.email })
        t.ok(login.cookies.find(cookie => cookie.name === 'refreshToken')?.httpOnly, 'the refresh cookie is set')
      }
      const tokens = sessionOf(variant, login)
      const read = await server.inject({ method: 'GET', url: `/users/${userId}`, ...credentials(variant, tokens) })
      t.equal(read.statusCode, 200)
      t.equal(read.json().email, session.user.email)
      t.equal((await registrationOptions(server, variant, { ...session, ...tokens })).statusCode, 200, 'the passkey login counts as a fresh authentication')

      const listed = (await server.inject({ method: 'GET', url: '/auth/passkeys', ...credentials(variant, tokens) })).json().passkeys
      t.equal(listed[0].id, created.json().id)
      t.type(listed[0].last_used_at, 'string', 'last_used_at is set')
      t.same(await eventTypes(server, variant, { ...session, ...tokens }), ['passkey_login', 'passkey_added', 'login'])
    })

    t.test('a login challenge is single use and expires after 5 minutes; an assertion cannot be replayed', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { credential } = await addPasskey(server, variant, session)
      const assertion = credential.assert(await loginOptions(server))
      t.equal((await passkeyLogin(server, assertion)).statusCode, 200)
      assertError(t, await passkeyLogin(server, assertion), 401, 'INVALID_PASSKEY')

      const options = await loginOptions(server)
      t.equal((await passkeyLogin(server, credential.assert(options))).statusCode, 200)
      assertError(t, await passkeyLogin(server, credential.assert(options)), 401, 'INVALID_PASSKEY')

      const late = credential.assert(await loginOptions(server))
      await withClockAhead(5 * 60_000 + 1000, async () => {
        assertError(t, await passkeyLogin(server, late), 401, 'INVALID_PASSKEY')
      })
      assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server), { challenge: 'bm90LWlzc3VlZC1ieS11cw' })), 401, 'INVALID_PASSKEY')
      const registration = (await registrationOptions(server, variant, session)).json()
      assertError(t, await passkeyLogin(server, credential.assert({ challenge: registration.challenge })), 401, 'INVALID_PASSKEY')
    })

    t.test('two logins racing with one assertion: exactly one succeeds', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { credential } = await addPasskey(server, variant, session)
      const assertion = credential.assert(await loginOptions(server))
      const answers = await Promise.all(Array.from({ length: 5 }, () => passkeyLogin(server, assertion)))
      t.same(answers.map(answer => answer.statusCode).sort(), [200, 401, 401, 401, 401])
    })

    t.test('a login is refused for an unknown credential, another origin, no user verification, a bad signature or a foreign user handle', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { credential } = await addPasskey(server, variant, session)
      const stranger = new SoftwareCredential()
      stranger.userHandle = credential.userHandle
      assertError(t, await passkeyLogin(server, stranger.assert(await loginOptions(server))), 401, 'INVALID_PASSKEY')
      assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server), { origin: 'https://evil.example' })), 401, 'INVALID_PASSKEY')
      assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server), { userVerified: false })), 401, 'INVALID_PASSKEY')
      const forged = credential.assert(await loginOptions(server))
      forged.response.signature = stranger.assert({ challenge: 'x' }).response.signature
      assertError(t, await passkeyLogin(server, forged), 401, 'INVALID_PASSKEY')
      // An ML-DSA-87 signature's size (4,627 bytes; Node 24 offers ML-DSA first): judged as a signature, not refused as a body.
      const postQuantumSized = credential.assert(await loginOptions(server))
      postQuantumSized.response.signature = Buffer.alloc(4627, 1).toString('base64url')
      assertError(t, await passkeyLogin(server, postQuantumSized), 401, 'INVALID_PASSKEY')
      assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server), { userHandle: Buffer.from('999').toString('base64url') })), 401, 'INVALID_PASSKEY')
      assertError(t, await passkeyLogin(server, { id: credential.id }), 400, 'VALIDATION_FAILED')
      t.equal((await passkeyLogin(server, credential.assert(await loginOptions(server)))).statusCode, 200, 'the real one still logs in')
      t.ok((await eventTypes(server, variant, session)).includes('login_failed'), 'failures of a known passkey are recorded')
    })

    t.test('a signature counter that goes back is refused and recorded; the real authenticator goes on', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { credential } = await addPasskey(server, variant, session)
      const clone = credential.clone()
      for (let login = 0; login < 3; login++) t.equal((await passkeyLogin(server, credential.assert(await loginOptions(server)))).statusCode, 200)
      // The clone's counter stayed at 0: its next answer says 1, below the 3 stored.
      assertError(t, await passkeyLogin(server, clone.assert(await loginOptions(server))), 401, 'PASSKEY_COUNTER_REGRESSED')
      assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server), { counter: 3 })), 401, 'PASSKEY_COUNTER_REGRESSED')
      assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server), { counter: 0 })), 401, 'PASSKEY_COUNTER_REGRESSED')
      t.equal((await passkeyLogin(server, credential.assert(await loginOptions(server)))).statusCode, 200, 'a counter above the stored one logs in')
      t.equal((await eventTypes(server, variant, session)).filter(type => type === 'passkey_counter_regressed').length, 3, 'each one is recorded')
      // The detail is kept for operators (account-service events), not shown at GET /auth/security-events.
      const events = await server.store.listSecurityEvents(session.user.id, { limit: 50 })
      const regressions = events.filter(event => event.type === 'passkey_counter_regressed')
      t.match(regressions[2].detail, { stored_counter: 3, presented_counter: 1 })
    })

    t.test('an authenticator that keeps no counter (always 0) logs in again and again', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { credential } = await addPasskey(server, variant, session)
      for (let login = 0; login < 2; login++) t.equal((await passkeyLogin(server, credential.assert(await loginOptions(server), { counter: 0 }))).statusCode, 200)
    })

    t.test('a removed passkey no longer logs in; a deleted user\'s passkeys go with it', async (t) => {
      const server = await build(t, { variant })
      const session = await loggedInUser(server, variant)
      const { credential, created } = await addPasskey(server, variant, session)
      await server.inject({ method: 'DELETE', url: `/auth/passkeys/${created.json().id}`, ...credentials(variant, session) })
      assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server))), 401, 'INVALID_PASSKEY')

      const leaving = await loggedInUser(server, variant)
      const kept = await addPasskey(server, variant, leaving)
      const deleted = await server.inject({ method: 'DELETE', url: `/users/${leaving.user.id}`, ...credentials(variant, leaving), payload: { password: leaving.user.password } })
      t.equal(deleted.statusCode, 204)
      assertError(t, await passkeyLogin(server, kept.credential.assert(await loginOptions(server))), 401, 'INVALID_PASSKEY')
    })
  })
}

t.test('REQUIRE_EMAIL_VERIFICATION: a passkey does not log in an account whose email is not verified', async (t) => {
  const variant = 'cookie'
  const server = await build(t, { variant, env: { REQUIRE_EMAIL_VERIFICATION: 'true' } })
  const user = await registerUser(server, variant)
  await markEmailVerified(server.store, user.id)
  const session = await logIn(server, variant, user)
  const { credential } = await addPasskey(server, variant, session)
  t.equal((await passkeyLogin(server, credential.assert(await loginOptions(server)))).statusCode, 200, 'verified: logs in')
  await server.store.updateUser(user.id, { emailVerified: false, emailVerifiedAt: null })
  assertError(t, await passkeyLogin(server, credential.assert(await loginOptions(server))), 403, 'EMAIL_NOT_VERIFIED')
})

t.test('rate limits: login options and passkey logins per address, passkey changes per user', async (t) => {
  const variant = 'cookie'
  const server = await build(t, { variant, env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '2', RATE_LIMIT_ACCOUNT_MAX: '2' } })
  for (let attempt = 0; attempt < 2; attempt++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options', remoteAddress: '10.0.0.1' })).statusCode, 200)
  }
  const limited = await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options', remoteAddress: '10.0.0.1' })
  assertError(t, limited, 429, 'RATE_LIMITED')
  t.match(limited.headers['retry-after'], /^[1-9]\d*$/)
  t.equal((await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options', remoteAddress: '10.0.0.2' })).statusCode, 200, 'another address is not limited')

  const guess = new SoftwareCredential().assert({ challenge: 'Z3Vlc3M', rpId: 'localhost' })
  for (let attempt = 0; attempt < 2; attempt++) assertError(t, await passkeyLogin(server, guess, '10.0.0.3'), 401, 'INVALID_PASSKEY')
  assertError(t, await passkeyLogin(server, guess, '10.0.0.3'), 429, 'RATE_LIMITED')

  const session = await loggedInUser(server, variant)
  for (let attempt = 0; attempt < 2; attempt++) t.equal((await registrationOptions(server, variant, session)).statusCode, 200)
  assertError(t, await registrationOptions(server, variant, session), 429, 'RATE_LIMITED')
  const other = await loggedInUser(server, variant)
  t.equal((await registrationOptions(server, variant, other)).statusCode, 200, 'another user is not limited')
})

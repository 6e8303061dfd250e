import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { createSealer } from '../../core/secrets/sealing.js'
import { hashToken } from '../../core/tokens/random-token.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { registerUser, type RegisteredUser } from '../fixtures/factories.js'
import {
  addClient, authorizationRequest, authorizeInBrowser, browse, CookieJar, oauthErrorOf, providerService, REDIRECT_URI, relyingParty
} from '../fixtures/oauth.js'

// Issue 33, finding 6: a copy of the store held live app credentials. The provider's models were keyed by
// their secrets (a refresh token, a code, the _session cookie), and its cookie key was stored in clear.

const KINDS = ['Client', 'Grant', 'Session', 'Interaction', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'AccessToken',
  'ClientCredentials', 'RegistrationAccessToken', 'PushedAuthorizationRequest', 'ReplayDetection']
const COOKIE_KEY_SETTING = 'oauth_cookie_key'
/** Where the store records the form of the provider's stored ids (core/oauth/stored-ids-upgrade.ts). */
const STORED_IDS_SETTING = 'oauth_model_ids'
const newEncryptionKey = () => randomBytes(32).toString('base64')

/** Every unexpired row of the provider's models, as a copy of the store would show them. */
async function storeRows (server: FastifyInstance) {
  const rows = await Promise.all(KINDS.map(async kind => (await server.store.listOAuthModels(kind, new Date())).map(row => ({ kind, ...row }))))
  return rows.flat()
}

/** Whether `secret` appears anywhere in the rows (an id, a payload field). */
async function storeHolds (server: FastifyInstance, secret: string): Promise<boolean> {
  return JSON.stringify(await storeRows(server)).includes(secret)
}

/** What a reader of the store would try: each row's id, and the id its payload names (oidc-provider's jti). */
function candidates (rows: Array<{ id: string, payload: Record<string, unknown> }>): string[] {
  return [...new Set(rows.flatMap(row => [row.id, ...(typeof row.payload.jti === 'string' ? [row.payload.jti] : [])]))]
}

/** The steps a browser with `jar` is asked for on a new authorization of the app (none: signed in and consented already). */
async function stepsAsked (baseUrl: string, jar: CookieJar, config: client.Configuration): Promise<string[]> {
  const steps: string[] = []
  const request = await authorizationRequest(config, 'openid email')
  const end = await authorizeInBrowser(baseUrl, jar, request.url, { onStep: step => steps.push(step) }).catch(() => undefined)
  // No step asked: the browser must have got the app its code.
  return steps.length === 0 && end?.searchParams.get('code') == null ? ['no code'] : steps
}

async function signedInApp (t: Test, env: Record<string, string> = {}, { exchange = true } = {}) {
  const { server, baseUrl } = await providerService(t, { env })
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { grants: ['authorization_code', 'refresh_token'] })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid email offline_access', { prompt: 'consent' })
  const jar = new CookieJar()
  const callback = await authorizeInBrowser(baseUrl, jar, request.url, { person: user })
  const code = callback.searchParams.get('code') ?? ''
  const codeRows = await server.store.listOAuthModels('AuthorizationCode', new Date())
  const codeStored = await storeHolds(server, code)
  const tokens = exchange ? await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state }) : undefined
  return { server, baseUrl, user, app, config, jar, callback, request, code, codeRows, codeStored, tokens }
}

/** The error of exchanging `code` at the token endpoint ('none' when it gives tokens), the app's credentials sent. */
async function exchangeCode (baseUrl: string, app: { clientId: string, clientSecret?: string }, code: string, verifier: string): Promise<string> {
  const answer = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic ' + Buffer.from(`${app.clientId}:${app.clientSecret ?? ''}`).toString('base64') },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier })
  })
  return answer.ok ? 'none' : String((await answer.json()).error)
}

/** oidc-provider's cookie signature (Koa's cookies, keygrip: HMAC-SHA1 of "name=value", base64url). */
const cookieSignature = (key: string, name: string, value: string) => createHmac('sha1', key).update(`${name}=${value}`).digest('base64url')

t.test('a refresh token read from the store\'s rows does not refresh; the app\'s own does', async (t) => {
  const { server, config, tokens } = await signedInApp(t)
  const refreshToken = tokens?.refresh_token ?? ''
  t.ok(refreshToken, 'the app holds a refresh token')
  t.notOk(await storeHolds(server, refreshToken), 'the refresh token is nowhere in the store')
  const rows = await server.store.listOAuthModels('RefreshToken', new Date())
  t.equal(rows.length, 1, 'one refresh token row')
  for (const candidate of candidates(rows)) {
    t.equal(await oauthErrorOf(client.refreshTokenGrant(config, candidate)), 'invalid_grant', 'a value read from its row is refused')
    t.equal(await oauthErrorOf(client.refreshTokenGrant(config, `stored:${candidate}`)), 'invalid_grant', 'and as a stored reference')
  }
  t.ok((await client.refreshTokenGrant(config, refreshToken)).access_token, 'the app\'s refresh token refreshes')
})

t.test('an authorization code and the _session cookie are not in the store; a Session row signed with the cookie key opens nothing', async (t) => {
  const { server, baseUrl, app, config, jar, code, codeRows, codeStored, request } = await signedInApp(t, {}, { exchange: false })
  t.ok(code, 'the app got a code')
  t.notOk(codeStored, 'the code is nowhere in the store')
  for (const candidate of candidates(codeRows)) {
    t.equal(await exchangeCode(baseUrl, app, candidate, request.verifier), 'invalid_grant', 'a code read from its row is refused')
  }
  t.equal(await exchangeCode(baseUrl, app, code, request.verifier), 'none', 'the app\'s code is good')

  const sessionCookie = jar.cookies.get('_session') ?? ''
  t.ok(sessionCookie, 'the browser holds the provider\'s session cookie')
  t.notOk(await storeHolds(server, sessionCookie), 'its value is nowhere in the store')
  t.same(await stepsAsked(baseUrl, jar, config), [], 'the browser itself is still signed in (single sign-on)')

  // The attacker's try with a copy of the store: the cookie key (in clear without SIGNING_KEY_ENCRYPTION_KEY) signs a Session row's id.
  const cookieKey = await server.store.readSetting(COOKIE_KEY_SETTING) ?? ''
  const sessions = await server.store.listOAuthModels('Session', new Date())
  t.equal(sessions.length, 1)
  for (const candidate of candidates(sessions)) {
    const forged = new CookieJar()
    forged.cookies.set('_session', candidate)
    forged.cookies.set('_session.sig', cookieSignature(cookieKey, '_session', candidate))
    t.same((await stepsAsked(baseUrl, forged, config)).slice(0, 1), ['login'], 'a cookie made of a Session row is asked to sign in')
  }
})

t.test('with SIGNING_KEY_ENCRYPTION_KEY the cookie key is sealed in the store; one in clear is sealed at the next start; a sealed one needs the setting to start', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  // The signing key from the environment: the refusals below are the cookie key's, not the stored signing key's.
  const JWT_PRIVATE_KEY = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const env = { DATABASE_URL: databaseUrl, JWT_PRIVATE_KEY }
  const before = await build(t, { variant: 'header', env })
  t.equal((await before.inject('/.well-known/openid-configuration')).statusCode, 200, 'the provider is built, its cookie key made')
  const clear = await before.store.readSetting(COOKIE_KEY_SETTING) ?? ''
  t.notMatch(clear, /^sealed:/, 'without the setting, in clear')
  await before.close()

  const encryptionKey = newEncryptionKey()
  const after = await build(t, { variant: 'header', env: { ...env, SIGNING_KEY_ENCRYPTION_KEY: encryptionKey } })
  const sealed = await after.store.readSetting(COOKIE_KEY_SETTING) ?? ''
  t.match(sealed, /^sealed:v1:/, 'sealed at the start with the setting')
  t.notOk(sealed.includes(clear), 'the clear key is gone from the store')
  t.equal(createSealer(Buffer.from(encryptionKey, 'base64')).open(sealed, COOKIE_KEY_SETTING), clear, 'the same key, sealed')
  t.equal((await after.inject('/.well-known/openid-configuration')).statusCode, 200, 'and the provider runs with it')
  await after.close()

  // The provider's RSA key (issue 34), made sealed beside the cookie key, may be the first sealed secret the start reads.
  await t.rejects(build(t, { variant: 'header', env }), { message: /^SIGNING_KEY_ENCRYPTION_KEY is not set, but the (OAuth provider's cookie key|signing key \S+) in the store is sealed/ },
    'without the setting the start is refused, naming it')
  await t.rejects(build(t, { variant: 'header', env: { ...env, SIGNING_KEY_ENCRYPTION_KEY: newEncryptionKey() } }),
    { message: /^SIGNING_KEY_ENCRYPTION_KEY does not open the (OAuth provider's cookie key|signing key \S+)/ }, 'with another key too')

  const fresh = await build(t, { variant: 'header', env: { JWT_PRIVATE_KEY, SIGNING_KEY_ENCRYPTION_KEY: encryptionKey } })
  t.equal((await fresh.inject('/.well-known/openid-configuration')).statusCode, 200)
  t.match(await fresh.store.readSetting(COOKIE_KEY_SETTING), /^sealed:v1:/, 'a key made with the setting is stored sealed')
})

t.test('rows stored before ids were hashed are rewritten at the next start: they keep working, and no secret stays in the store', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const first = await signedInApp(t, { DATABASE_URL: databaseUrl })
  const refreshToken = first.tokens?.refresh_token ?? ''
  const sessionCookie = first.jar.cookies.get('_session') ?? ''
  // The store as the service before this change wrote it: each row keyed by its secret, which its payload names too.
  const now = new Date()
  for (const [kind, secret] of [['RefreshToken', refreshToken], ['Session', sessionCookie], ['AuthorizationCode', first.code]]) {
    const [row] = (await first.server.store.listOAuthModels(kind, now)).filter(row => row.id === hashToken(secret))
    t.ok(row, `the ${kind} row`)
    await first.server.store.upsertOAuthModel(kind, secret, { ...row.payload, jti: secret }, row.expiresAt)
    if (row.consumedAt !== null) await first.server.store.consumeOAuthModel(kind, secret, row.consumedAt)
    await first.server.store.destroyOAuthModel(kind, row.id)
  }
  await first.server.store.writeSetting(STORED_IDS_SETTING, 'raw')
  t.ok(await storeHolds(first.server, refreshToken), 'the old form holds the refresh token')
  await first.server.close()

  // Started again at the same address: the same issuer, which is the resource (aud) the refresh token was granted for.
  const baseUrl = first.baseUrl
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false' } })
  await server.listen({ port: Number(new URL(baseUrl).port), host: 'localhost' })
  for (const [name, secret] of [['refresh token', refreshToken], ['session cookie', sessionCookie], ['code', first.code]]) {
    t.notOk(await storeHolds(server, secret), `the ${name} is nowhere in the store any more`)
  }
  const config = await relyingParty(baseUrl, first.app)
  t.notOk((await stepsAsked(baseUrl, first.jar, config)).includes('login'), 'the browser is still signed in')
  t.ok((await client.refreshTokenGrant(config, refreshToken)).access_token, 'the refresh token still refreshes')
  t.equal(await exchangeCode(baseUrl, first.app, first.code, first.request.verifier), 'invalid_grant', 'a code exchanged before stays used')
  t.equal(await server.store.readSetting(STORED_IDS_SETTING), 'sha256', 'the upgrade is recorded')
})

/** The device flow as a browser and a device go through it: the code page, sign-in, consent, then the device polls. */
async function deviceFlow (t: Test, server: FastifyInstance, baseUrl: string, user: RegisteredUser) {
  const app = await addClient(server, { name: 'TV', public: true, redirectUris: [], grants: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'] })
  const config = await relyingParty(baseUrl, app)
  const device = await client.initiateDeviceAuthorization(config, { scope: 'openid email' })
  t.notOk(await storeHolds(server, device.device_code), 'the device code is nowhere in the store')
  t.notOk(await storeHolds(server, device.user_code), 'nor the user code')
  const jar = new CookieJar()
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(await (await browse(jar, device.verification_uri)).text())?.[1] ?? ''
  const entered = await browse(jar, `${baseUrl}/oauth/device`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf, user_code: device.user_code, confirm: 'yes' })
  })
  const steps: string[] = []
  await authorizeInBrowser(baseUrl, jar, entered.headers.get('location') ?? '', { person: user, onStep: step => steps.push(step) })
  t.same(steps, ['login', 'consent'], 'the browser signs in and consents')
  const rows = await server.store.listOAuthModels('DeviceCode', new Date())
  for (const candidate of candidates(rows).flatMap(id => [id, `stored:${id}`])) {
    const answer = await fetch(`${baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: candidate, client_id: app.clientId })
    })
    t.equal(answer.status, 400, 'a device code read from the store gets no token')
  }
  return await client.pollDeviceAuthorizationGrant(config, { ...device, interval: 0 })
}

t.test('the provider still works end to end: code and refresh, revocation, pushed requests, the device flow, logout', async (t) => {
  const { server, baseUrl, user, config, jar, tokens } = await signedInApp(t)
  const refreshToken = tokens?.refresh_token ?? ''
  t.ok((await client.refreshTokenGrant(config, refreshToken)).access_token, 'refresh')
  await client.tokenRevocation(config, refreshToken)
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, refreshToken)), 'invalid_grant', 'a revoked refresh token is refused')

  const pushed = await authorizationRequest(config, 'openid email')
  const parUrl = await client.buildAuthorizationUrlWithPAR(config, Object.fromEntries(pushed.url.searchParams))
  t.notOk(await storeHolds(server, parUrl.searchParams.get('request_uri')?.split(':').at(-1) ?? ''), 'a pushed request\'s id is nowhere in the store')
  const parCallback = await authorizeInBrowser(baseUrl, jar, parUrl, { person: user })
  t.ok((await client.authorizationCodeGrant(config, parCallback, { pkceCodeVerifier: pushed.verifier, expectedState: pushed.state })).access_token,
    'a pushed authorization request signs in')
  const again = await browse(new CookieJar(), parUrl.href)
  t.match(again.headers.get('location'), /[?&]error=invalid_request_uri/, 'its request_uri is good once')

  const deviceTokens = await deviceFlow(t, server, baseUrl, user)
  t.ok(deviceTokens.access_token, 'the device polls its tokens')

  const hint = tokens?.id_token ?? ''
  const logoutPage = await browse(jar, `${baseUrl}/oauth/logout?id_token_hint=${hint}`)
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(await logoutPage.text())?.[1] ?? ''
  const loggedOut = await browse(jar, `${baseUrl}/oauth/logout/confirm`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf, logout: 'yes' })
  })
  t.ok(loggedOut.status < 400, `logout answered ${loggedOut.status}`)
  t.same((await stepsAsked(baseUrl, jar, config)).slice(0, 1), ['login'], 'after logout the browser signs in again')
})

t.test('a registration access token is not in the store: read from its row, it does not read the client; the one handed out does', async (t) => {
  const { server, baseUrl } = await providerService(t, { env: { OAUTH_REGISTRATION_TOKEN: 'registration-token-0123456789' } })
  const answer = await fetch(`${baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer registration-token-0123456789' },
    body: JSON.stringify({ client_name: 'Registered', redirect_uris: [REDIRECT_URI] })
  })
  t.equal(answer.status, 201)
  const { registration_access_token: token, registration_client_uri: uri } = await answer.json() as { registration_access_token: string, registration_client_uri: string }
  t.ok(token, 'a registration access token is handed out')
  t.notOk(await storeHolds(server, token), 'it is nowhere in the store')
  const read = (bearer: string) => fetch(uri, { headers: { authorization: `Bearer ${bearer}` } }).then(response => response.status)
  for (const candidate of candidates(await server.store.listOAuthModels('RegistrationAccessToken', new Date()))) {
    t.equal(await read(candidate), 401, 'a value read from its row reads nothing')
  }
  t.equal(await read(token), 200, 'the token handed out reads the client')
})

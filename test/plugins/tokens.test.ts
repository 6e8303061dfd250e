import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { assertError } from '../fixtures/assertions.js'
import { loggedInUser } from '../fixtures/factories.js'
import { decodePart, signHs256, signWithOurKey, validClaims } from '../fixtures/jwt.js'

const variant = 'header'

t.test('tokens signed otherwise than by us are 401 INVALID_TOKEN', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const { kid } = decodePart(session.accessToken, 0)
  const claims = decodePart(session.accessToken, 1)
  const { privateKey: foreignKey } = generateKeyPairSync('ed25519')
  const foreignPem = foreignKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const ourPublicPem = createPublicKey({ key: server.accessTokens.jwks.keys[0], format: 'jwk' }).export({ format: 'pem', type: 'spki' }).toString()
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${session.accessToken.split('.')[1]}.`

  const forged = {
    'another key under our kid': createSigner({ key: foreignPem, algorithm: 'EdDSA', kid })(claims),
    'another key, another kid': createSigner({ key: foreignPem, algorithm: 'EdDSA', kid: 'foreign' })(claims),
    'HS256 keyed with our public key': signHs256({ alg: 'HS256', typ: 'JWT', kid }, claims, ourPublicPem),
    'alg none': unsigned
  }
  for (const [name, accessToken] of Object.entries(forged)) {
    const response = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${accessToken}` } })
    assertError(t, response, 401, 'INVALID_TOKEN')
    t.comment(name)
  }
})

t.test('a token signed with our key for another audience or issuer is refused', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const url = `/users/${session.user.id}`
  const ours = await signWithOurKey(server, validClaims(session))
  t.equal((await server.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ours}` } })).statusCode, 200, 'the control: our own claims pass')
  for (const options of [{ aud: 'another-audience' }, { iss: 'someone-else' }]) {
    const token = await signWithOurKey(server, validClaims(session, options))
    assertError(t, await server.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } }), 401, 'INVALID_TOKEN')
  }
})

t.test('a token from another deployment (its own generated key) is refused', async (t) => {
  const elsewhere = await build(t, { variant })
  const foreignSession = await loggedInUser(elsewhere, variant)
  const server = await build(t, { variant })
  await loggedInUser(server, variant)
  const response = await server.inject({ method: 'GET', url: '/users/1', headers: { authorization: `Bearer ${foreignSession.accessToken}` } })
  assertError(t, response, 401, 'INVALID_TOKEN')
})

t.test('a token without a numeric subject or a session id is refused', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  for (const claims of [{ sub: 'admin' }, { sid: undefined }, { sub: `0${session.user.id}` }]) {
    const token = await signWithOurKey(server, JSON.parse(JSON.stringify(validClaims(session, claims))))
    assertError(t, await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${token}` } }), 401, 'INVALID_TOKEN')
  }
})

t.test('an access token is refused once its exp has passed (no leeway)', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant, env: { ACCESS_TOKEN_TTL: '1s' }, clock })
  const session = await loggedInUser(server, variant)
  const { exp } = decodePart(session.accessToken, 1)
  const read = () => server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}` } })
  clock.advance(exp * 1000 - clock.now())
  t.equal((await read()).statusCode, 200, 'still good at the second of its exp')
  clock.advance(1)
  assertError(t, await read(), 401, 'TOKEN_EXPIRED')
})

t.test('the JWKS verifies our tokens: other services need no secret', async (t) => {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  const jwks = (await server.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
  t.match(jwks.keys, [{ kty: 'OKP' }, { kty: 'RSA' }], 'the service\'s key and the RS256 key of ID tokens')
  const [header, payload, signature] = session.accessToken.split('.')
  const jwk = jwks.keys.find((key: { kid: string }) => key.kid === decodePart(session.accessToken, 0).kid)
  t.match(jwk, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' })
  t.notOk('d' in jwk, 'no private part')
  const valid = verify(null, Buffer.from(`${header}.${payload}`), createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(signature, 'base64url'))
  t.ok(valid)
})

t.test('JWT_PRIVATE_KEY signs with the configured key; a P-256 key gives ES256', async (t) => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const server = await build(t, { variant, env: { JWT_PRIVATE_KEY: pem.replaceAll('\n', '\\n') } })
  const session = await loggedInUser(server, variant)
  t.equal(decodePart(session.accessToken, 0).alg, 'ES256')
  t.match(server.accessTokens.jwks.keys[0], { kty: 'EC', crv: 'P-256', alg: 'ES256' })
  const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}` } })
  t.equal(read.statusCode, 200)
})

t.test('a JWT_PRIVATE_KEY of another kind stops the start', async (t) => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  await t.rejects(build(t, { variant, env: { JWT_PRIVATE_KEY: pem } }), /Ed25519 or P-256/)
})

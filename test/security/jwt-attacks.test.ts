import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { loggedInUser } from '../fixtures/factories.js'
import { decodePart, signHs256, signWithOurKey, validClaims } from '../fixtures/jwt.js'

const variant = 'header'

async function readWith (server: FastifyInstance, userId: number, accessToken: string) {
  return await server.inject({ method: 'GET', url: `/users/${userId}`, headers: { authorization: `Bearer ${accessToken}` } })
}

async function setUp (t: Test) {
  const server = await build(t, { variant })
  const session = await loggedInUser(server, variant)
  // The control: a token we sign with these claims is accepted, so each refusal below is the attack's doing.
  const control = await readWith(server, session.user.id, await signWithOurKey(server, validClaims(session)))
  t.equal(control.statusCode, 200, 'control: our own key and claims pass')
  return { server, session, userId: session.user.id, kid: decodePart(session.accessToken, 0).kid as string }
}

t.test('alg none is refused', async (t) => {
  const { server, session, userId, kid } = await setUp(t)
  const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url')
  const unsigned = `${encode({ alg: 'none', typ: 'JWT', kid })}.${encode(validClaims(session))}.`
  assertError(t, await readWith(server, userId, unsigned), 401, 'INVALID_TOKEN')
})

t.test('HS256 signed with our public key as the secret is refused', async (t) => {
  const { server, session, userId, kid } = await setUp(t)
  const ourPublicPem = createPublicKey({ key: server.accessTokens.jwks.keys[0], format: 'jwk' }).export({ format: 'pem', type: 'spki' }).toString()
  const forged = signHs256({ alg: 'HS256', typ: 'JWT', kid }, validClaims(session), ourPublicPem)
  assertError(t, await readWith(server, userId, forged), 401, 'INVALID_TOKEN')
})

t.test('a foreign key is refused, under a foreign kid or under ours', async (t) => {
  const { server, session, userId, kid } = await setUp(t)
  const foreignPem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  for (const header of [{ kid: 'foreign-key' }, { kid }]) {
    const forged = createSigner({ key: foreignPem, algorithm: 'EdDSA', ...header })(validClaims(session))
    assertError(t, await readWith(server, userId, forged), 401, 'INVALID_TOKEN')
  }
})

t.test('our key under a kid that is not ours is refused', async (t) => {
  const { server, session, userId } = await setUp(t)
  assertError(t, await readWith(server, userId, await signWithOurKey(server, validClaims(session), { kid: 'not-our-kid' })), 401, 'INVALID_TOKEN')
})

t.test('a token without a kid is refused', async (t) => {
  const { server, session, userId } = await setUp(t)
  assertError(t, await readWith(server, userId, await signWithOurKey(server, validClaims(session), { kid: null })), 401, 'INVALID_TOKEN')
})

t.test('a wrong issuer is refused', async (t) => {
  const { server, session, userId } = await setUp(t)
  assertError(t, await readWith(server, userId, await signWithOurKey(server, validClaims(session, { iss: 'someone-else' }))), 401, 'INVALID_TOKEN')
})

t.test('a wrong audience is refused', async (t) => {
  const { server, session, userId } = await setUp(t)
  assertError(t, await readWith(server, userId, await signWithOurKey(server, validClaims(session, { aud: 'another-service' }))), 401, 'INVALID_TOKEN')
})

t.test('a token issued in the future is refused', async (t) => {
  const { server, session, userId } = await setUp(t)
  const now = Math.floor(Date.now() / 1000)
  const future = await signWithOurKey(server, validClaims(session, { iat: now + 60, exp: now + 660 }))
  assertError(t, await readWith(server, userId, future), 401, 'INVALID_TOKEN')
  const withinLeeway = await signWithOurKey(server, validClaims(session, { iat: now, exp: now + 600 }))
  t.equal((await readWith(server, userId, withinLeeway)).statusCode, 200, 'now is fine')
})

t.test('a token expired by more than the 1 s leeway is refused', async (t) => {
  const { server, session, userId } = await setUp(t)
  const now = Math.floor(Date.now() / 1000)
  const expired = await signWithOurKey(server, validClaims(session, { iat: now - 600, exp: now - 2 }))
  assertError(t, await readWith(server, userId, expired), 401, 'TOKEN_EXPIRED')
})

import { createSigner } from 'fast-jwt'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { openStore } from '../../db/open.js'
import { rotateSigningKey, verifyingKeys } from '../../core/tokens/keys.js'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { assertError } from '../fixtures/assertions.js'
import { loggedInUser, logIn } from '../fixtures/factories.js'
import { decodePart, validClaims } from '../fixtures/jwt.js'
import { testDatabaseUrl } from '../fixtures/database.js'

const variant = 'header'
const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

async function jwksKids (server: FastifyInstance): Promise<string[]> {
  return (await server.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys.map((key: { kid: string }) => key.kid)
}

/** The kids of the service's keys in the JWKS (beside them, the RS256 key of ID tokens). */
async function serviceKids (server: FastifyInstance): Promise<string[]> {
  const { keys } = (await server.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
  return keys.filter((key: { alg: string }) => key.alg !== 'RS256').map((key: { kid: string }) => key.kid)
}

async function read (server: FastifyInstance, userId: number, accessToken: string) {
  return await server.inject({ method: 'GET', url: `/users/${userId}`, headers: { authorization: `Bearer ${accessToken}` } })
}

t.test('after a rotation the new key signs, the old key verifies its tokens until they expire, and the JWKS lists it until its ID tokens have expired too', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant, env: { ACCESS_TOKEN_TTL: '2s' }, clock })
  const before = await loggedInUser(server, variant)
  const oldKid = decodePart(before.accessToken, 0).kid
  // Kept aside now: the rotation deletes the old key's private half from the store.
  const oldPrivateKeyPem = (await server.store.listSigningKeys())[0].privateKeyPem ?? ''

  clock.advance(1)
  const rotated = await rotateSigningKey(server.store, { now: new Date(clock.now()) })
  await server.accessTokens.reloadKeys()
  const after = await logIn(server, variant, before.user)
  t.equal(decodePart(after.accessToken, 0).kid, rotated.kid, 'the new key signs')
  t.not(rotated.kid, oldKid)
  t.same((await serviceKids(server)).sort(), [oldKid, rotated.kid].sort(), 'the JWKS lists both')
  t.equal((await read(server, before.user.id, before.accessToken)).statusCode, 200, 'a token of the old key still verifies')

  clock.advance(3000) // ACCESS_TOKEN_TTL + 1 s leeway: every access token of the old key has expired
  // A token made now with the retired key (say, leaked from an old backup) is refused although its claims are valid.
  const lateForgery = createSigner({ key: oldPrivateKeyPem, algorithm: 'EdDSA', kid: oldKid })(validClaims(before))
  assertError(t, await read(server, before.user.id, lateForgery), 401, 'INVALID_TOKEN')
  t.same((await serviceKids(server)).sort(), [oldKid, rotated.kid].sort(), 'still published: an ID token it signed lives an hour')
  clock.advance(3_600_000 + 1000 - 3000 - 1)
  t.same((await serviceKids(server)).sort(), [oldKid, rotated.kid].sort(), 'at an hour and a second less 1 ms')
  clock.advance(1)
  t.same(await serviceKids(server), [rotated.kid], 'the old key left the JWKS an hour and a second after its successor came')
})

t.test('a key retires exactly ACCESS_TOKEN_TTL + 1 s after its successor arrived', async (t) => {
  const at = (seconds: number) => ({ createdAt: new Date(seconds * 1000), name: `created at ${seconds}` })
  const keys = [at(0), at(100), at(200)]
  const retention = 15_000 + 1000
  t.same(verifyingKeys(keys, new Date(115_999), retention).map(key => key.name), ['created at 0', 'created at 100', 'created at 200'])
  t.same(verifyingKeys(keys, new Date(116_000), retention).map(key => key.name), ['created at 100', 'created at 200'])
  t.same(verifyingKeys(keys, new Date(999_000), retention).map(key => key.name), ['created at 200'], 'the newest always verifies')
})

t.test('a running instance picks up a key that another instance or the admin command added', async (t) => {
  // Two instances and the admin command on one database: a file or a PostgreSQL schema.
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const first = await build(t, { variant, env: { DATABASE_URL: databaseUrl } })
  const second = await build(t, { variant, env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(first, variant)

  const admin = await openStore(databaseUrl)
  const rotated = await rotateSigningKey(admin)
  await admin.close()
  await first.accessTokens.reloadKeys()
  const signedByNewKey = await logIn(first, variant, session.user)
  t.equal(decodePart(signedByNewKey.accessToken, 0).kid, rotated.kid)

  // The second instance has not reloaded yet: the unknown kid makes it read the store.
  t.equal((await read(second, session.user.id, signedByNewKey.accessToken)).statusCode, 200)
  t.equal(decodePart((await logIn(second, variant, session.user)).accessToken, 0).kid, rotated.kid, 'and it signs with the new key too')
})

t.test('unknown kids read the store at most once a second', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant, clock })
  const session = await loggedInUser(server, variant)
  let reads = 0
  const listSigningKeys = server.store.listSigningKeys.bind(server.store)
  server.store.listSigningKeys = async () => { reads++; return await listSigningKeys() }
  const [, payload, signature] = session.accessToken.split('.')
  const withKid = (kid: string) => [Buffer.from(JSON.stringify({ ...decodePart(session.accessToken, 0), kid })).toString('base64url'), payload, signature].join('.')
  const responses = await Promise.all(Array.from({ length: 20 }, (_, index) => read(server, session.user.id, withKid(`forged-${index}`))))
  for (const response of responses) assertError(t, response, 401, 'INVALID_TOKEN')
  t.equal(reads, 1, '20 unknown kids at once read the store once')
  assertError(t, await read(server, session.user.id, withKid('forged-later')), 401, 'INVALID_TOKEN')
  t.equal(reads, 1, 'nor again within the second')
  clock.advance(999)
  assertError(t, await read(server, session.user.id, withKid('forged-within-the-second')), 401, 'INVALID_TOKEN')
  t.equal(reads, 1, 'not at 999 ms either')
  clock.advance(1)
  assertError(t, await read(server, session.user.id, withKid('forged-after-a-second')), 401, 'INVALID_TOKEN')
  t.equal(reads, 2, 'a second later, once more')
})

t.test('SIGNING_KEY_ROTATE_AFTER rotates the key by age', async (t) => {
  const server = await build(t, { variant, env: { SIGNING_KEY_ROTATE_AFTER: '1s', SIGNING_KEY_RELOAD_INTERVAL: '1s' } })
  const session = await loggedInUser(server, variant)
  const firstKid = decodePart(session.accessToken, 0).kid
  await sleep(2300)
  const later = await logIn(server, variant, session.user)
  t.not(decodePart(later.accessToken, 0).kid, firstKid, 'a newer key signs')
  t.ok((await server.store.listSigningKeys()).length >= 2)
  t.equal((await read(server, session.user.id, session.accessToken)).statusCode, 200, 'the first key still verifies its unexpired tokens')
})

t.test('with JWT_PRIVATE_KEY the configured key alone signs and verifies the service\'s tokens', async (t) => {
  const { generateKeyPairSync } = await import('node:crypto')
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const server = await build(t, { variant, env: { JWT_PRIVATE_KEY: pem } })
  const session = await loggedInUser(server, variant)
  await rotateSigningKey(server.store)
  await server.accessTokens.reloadKeys()
  t.equal(decodePart((await logIn(server, variant, session.user)).accessToken, 0).kid, decodePart(session.accessToken, 0).kid)
  t.equal((await serviceKids(server)).length, 1)
  t.equal((await jwksKids(server)).length, 2, 'beside it, the store\'s RS256 key of ID tokens')
})

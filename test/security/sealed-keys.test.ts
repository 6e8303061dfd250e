import { spawnSync } from 'node:child_process'
import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSealer } from '../../core/secrets/sealing.js'
import { rotateSigningKey } from '../../core/tokens/keys.js'
import { build } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { loggedInUser, logIn, type Session } from '../fixtures/factories.js'
import { decodePart } from '../fixtures/jwt.js'
import { onPostgres, testDatabaseUrl } from '../fixtures/database.js'

// Finding 5: private signing keys were stored in clear, and retired private keys were never deleted.
const variant = 'header'
const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url))
const newEncryptionKey = () => randomBytes(32).toString('base64')

async function storedKeys (server: FastifyInstance) {
  return await server.store.listSigningKeys()
}

async function readsItself (server: FastifyInstance, session: Session): Promise<number> {
  return (await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}` } })).statusCode
}

t.test('with SIGNING_KEY_ENCRYPTION_KEY the stored private key is sealed, not a PEM, and the service signs and verifies', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const encryptionKey = newEncryptionKey()
  const server = await build(t, { variant, env: { DATABASE_URL: databaseUrl, SIGNING_KEY_ENCRYPTION_KEY: encryptionKey } })
  const session = await loggedInUser(server, variant)
  t.equal(await readsItself(server, session), 200, 'a token it signed verifies')

  const [key] = await storedKeys(server)
  t.match(key.privateKeyPem, /^sealed:v1:[A-Za-z0-9_-]+$/, 'stored sealed')
  t.notMatch(key.privateKeyPem, /PRIVATE KEY/)
  t.match(createSealer(Buffer.from(encryptionKey, 'base64')).open(key.privateKeyPem ?? '', key.kid), /^-----BEGIN PRIVATE KEY-----/,
    'it opens with the key and the kid')
  t.throws(() => createSealer(Buffer.from(encryptionKey, 'base64')).open(key.privateKeyPem ?? '', 'another kid'), { name: 'UnsealError' },
    'moved to another key\'s row, it does not open')
  if (!onPostgres) {
    const files = [databaseUrl, `${databaseUrl}-wal`].filter(existsSync).map(file => readFileSync(file, 'latin1')).join('')
    t.notMatch(files, /PRIVATE KEY/, 'no private key in clear in the SQLite file or its WAL')
  }
})

t.test('a private key stored in clear is sealed at the next start with SIGNING_KEY_ENCRYPTION_KEY, and keeps signing', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const before = await build(t, { variant, env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(before, variant)
  const [clear] = await storedKeys(before)
  t.match(clear.privateKeyPem, /^-----BEGIN PRIVATE KEY-----/, 'without the setting, in clear (as before)')
  await before.close()

  const encryptionKey = newEncryptionKey()
  const after = await build(t, { variant, env: { DATABASE_URL: databaseUrl, SIGNING_KEY_ENCRYPTION_KEY: encryptionKey } })
  const [sealed] = await storedKeys(after)
  t.equal(sealed.kid, clear.kid, 'the same key')
  t.match(sealed.privateKeyPem, /^sealed:v1:/, 'now sealed')
  t.equal(createSealer(Buffer.from(encryptionKey, 'base64')).open(sealed.privateKeyPem ?? '', sealed.kid), clear.privateKeyPem)
  t.equal(await readsItself(after, session), 200, 'a token signed before still verifies')
  const again = await logIn(after, variant, session.user)
  t.equal(decodePart(again.accessToken, 0).kid, clear.kid, 'and the key still signs')
  t.equal(await readsItself(after, again), 200)
})

t.test('a retired key\'s private half is deleted once its successor signs, and the key verifies until it retires', async (t) => {
  const encryptionKey = newEncryptionKey()
  const clock = testClock()
  const server = await build(t, { variant, env: { SIGNING_KEY_ENCRYPTION_KEY: encryptionKey, ACCESS_TOKEN_TTL: '5s' }, clock })
  const before = await loggedInUser(server, variant)
  const rotated = await rotateSigningKey(server.store, { sealer: createSealer(Buffer.from(encryptionKey, 'base64')), now: new Date(clock.now()) })
  await server.accessTokens.reloadKeys()

  const [retired, newest] = await storedKeys(server)
  t.equal(retired.kid, decodePart(before.accessToken, 0).kid)
  t.equal(retired.privateKeyPem, null, 'the retired key\'s private half is gone from the store')
  t.match(newest.privateKeyPem, /^sealed:v1:/, 'the new key is stored sealed')
  const after = await logIn(server, variant, before.user)
  t.equal(decodePart(after.accessToken, 0).kid, rotated.kid, 'the successor signs')
  t.equal(await readsItself(server, before), 200, 'a token of the retired key still verifies')
  t.ok((await server.inject('/.well-known/jwks.json')).json().keys.some((key: { kid: string }) => key.kid === retired.kid), 'and the JWKS still lists it')
  clock.advance(6100) // past ACCESS_TOKEN_TTL and the 1 s of leeway after the successor began to sign
  t.equal(await readsItself(server, before), 401, 'until it retires')
})

t.test('a key added without deleting its predecessor\'s private half (an older CLI) loses it at the next key load', async (t) => {
  const server = await build(t, { variant })
  const [first] = await storedKeys(server)
  const { privateKey } = generateKeyPairSync('ed25519')
  await server.store.addSigningKey({
    kid: 'added-by-hand',
    algorithm: 'EdDSA',
    publicKeyPem: createPublicKey(privateKey).export({ format: 'pem', type: 'spki' }).toString(),
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    createdAt: new Date(first.createdAt.getTime() + 1)
  })
  await server.accessTokens.reloadKeys()
  const [retired] = await storedKeys(server)
  t.equal(retired.kid, first.kid)
  t.equal(retired.privateKeyPem, null)
})

t.test('keys rotate through the CLI seals the new key with SIGNING_KEY_ENCRYPTION_KEY and deletes the old private half', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const encryptionKey = newEncryptionKey()
  const env = { DATABASE_URL: databaseUrl, SIGNING_KEY_ENCRYPTION_KEY: encryptionKey }
  const server = await build(t, { variant, env })
  const session = await loggedInUser(server, variant)

  const rotated = spawnSync(process.execPath, [CLI, 'keys', 'rotate', '--json'], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 30_000 })
  t.equal(rotated.status, 0, rotated.stderr)
  t.notMatch(rotated.stdout, /PRIVATE|sealed:/, 'never the private key')
  const [newKid, newRs256Kid] = JSON.parse(rotated.stdout).map((key: { kid: string }) => key.kid)
  const [old, added, addedRs256] = await storedKeys(server)
  t.same([added.kid, addedRs256.kid], [newKid, newRs256Kid])
  t.match(added.privateKeyPem, /^sealed:v1:/, 'the new key is stored sealed')
  t.match(addedRs256.privateKeyPem, /^sealed:v1:/, 'and the new RS256 key')
  t.equal(old.privateKeyPem, null, 'the old key\'s private half is deleted')

  await server.accessTokens.reloadKeys()
  const again = await logIn(server, variant, session.user)
  t.equal(decodePart(again.accessToken, 0).kid, newKid, 'the service opens the new key and signs with it')
  t.equal(await readsItself(server, again), 200)
  t.equal(await readsItself(server, session), 200, 'the old key still verifies its tokens')

  const listed = spawnSync(process.execPath, [CLI, 'keys', 'list'], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 30_000 })
  t.equal(listed.status, 0, listed.stderr)
  t.match(listed.stdout, new RegExp(`^${old.kid}  EdDSA  \\S+\\n${newKid}  EdDSA  \\S+  \\(signs\\)\\n${newRs256Kid}  RS256  \\S+  \\(signs\\)\\n$`), 'keys list works with sealed keys')
})

import { generateKeyPairSync } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { SigningKeysStore } from '../../../db/store.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { createKeyRing, ID_TOKEN_TTL_SECONDS, UNKNOWN_KID_RELOAD_GAP_MS, type KeyRingOptions } from '../../../core/tokens/key-ring.js'
import { rotateSigningKey } from '../../../core/tokens/keys.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { decodePart } from '../../fixtures/jwt.js'
import { eventually } from '../../fixtures/eventually.js'

const options: KeyRingOptions = {
  accessTokenTtlSeconds: 2,
  issuer: 'account-service',
  audience: 'account-service',
  reloadIntervalSeconds: 3600,
  rotateAfterSeconds: 0
}

/** The store with its reads of the keys counted. */
function counting (store: SigningKeysStore): SigningKeysStore & { reads: number } {
  const counted = {
    reads: 0,
    listSigningKeys: async () => { counted.reads++; return await store.listSigningKeys() },
    addSigningKey: store.addSigningKey.bind(store),
    replaceSigningKeyPrivateHalf: store.replaceSigningKeyPrivateHalf.bind(store)
  }
  return counted
}

t.test('on a fresh store the ring stores one key, which signs and is the whole JWKS', async (t) => {
  const store = await testStore(t)
  const ring = await createKeyRing({ store, clock: testClock(), log: silentLogger }, options)
  t.teardown(() => ring.close())
  const stored = await store.listSigningKeys()
  t.equal(stored.length, 1)
  t.equal(decodePart(ring.signAccessToken({ sub: '1', sid: 's' }), 0).kid, stored[0].kid)
  t.same(ring.jwks.keys.map(key => key.kid), [stored[0].kid])
  t.match(decodePart(ring.signStatusList({}), 0), { kid: stored[0].kid, typ: 'statuslist+jwt' })
})

t.test('after a rotation and a reload the new key signs; the old one verifies access tokens until ACCESS_TOKEN_TTL + 1 s later, and is published an hour longer', async (t) => {
  const store = await testStore(t)
  const clock = testClock()
  const ring = await createKeyRing({ store, clock, log: silentLogger }, options)
  t.teardown(() => ring.close())
  const oldKid = ring.jwks.keys[0].kid
  clock.advance(1)
  const rotated = await rotateSigningKey(store, { now: new Date(clock.now()) })
  await ring.reload()
  t.equal(decodePart(ring.signAccessToken({ sub: '1', sid: 's' }), 0).kid, rotated.kid, 'the new key signs')
  t.same(ring.jwks.keys.map(key => key.kid), [oldKid, rotated.kid], 'the JWKS lists both')
  const old = await ring.keyFor(oldKid)
  t.equal(old?.retiresAt, clock.now() + 3000, 'its access tokens are refused 3 s after its successor came')
  clock.advance(3000)
  t.same(ring.jwks.keys.map(key => key.kid), [oldKid, rotated.kid], 'published while an ID token it signed may live')
  clock.advance(ID_TOKEN_TTL_SECONDS * 1000 + 1000 - 3000 - 1)
  t.equal(ring.jwks.keys.length, 2, 'still at an hour and a second less 1 ms')
  clock.advance(1)
  t.same(ring.jwks.keys.map(key => key.kid), [rotated.kid], 'unpublished an hour and a second after its successor came')
})

t.test('a kid added elsewhere is found at once; unknown kids read the store at most once per gap', async (t) => {
  const raw = await testStore(t)
  const store = counting(raw)
  const clock = testClock()
  const ring = await createKeyRing({ store, clock, log: silentLogger }, options)
  t.teardown(() => ring.close())
  const rotated = await rotateSigningKey(raw, { now: new Date(clock.now() + 1) })
  const reads = store.reads
  t.equal((await ring.keyFor(rotated.kid))?.key.kid, rotated.kid, 'the new kid makes the ring read the store')
  t.equal(store.reads, reads + 1)
  const forged = await Promise.all([ring.keyFor('forged-1'), ring.keyFor('forged-2')])
  t.same(forged, [undefined, undefined])
  t.equal(store.reads, reads + 1, 'not again within the gap')
  clock.advance(UNKNOWN_KID_RELOAD_GAP_MS)
  t.equal(await ring.keyFor('forged-3'), undefined)
  t.equal(store.reads, reads + 2, 'once more after it')
})

t.test('the reload timer rotates a key older than SIGNING_KEY_ROTATE_AFTER, and stops at close', async (t) => {
  const store = await testStore(t)
  const clock = testClock()
  const ring = await createKeyRing({ store, clock, log: silentLogger }, { ...options, reloadIntervalSeconds: 0.02, rotateAfterSeconds: 60 })
  const firstKid = ring.jwks.keys[0].kid
  t.equal((await store.listSigningKeys()).length, 1)
  clock.advance(60_000)
  t.ok(await eventually(async () => (await store.listSigningKeys()).length === 2), 'a new key is stored')
  t.ok(await eventually(async () => decodePart(ring.signAccessToken({}), 0).kid !== firstKid), 'and signs once reloaded')
  await ring.close()
  clock.advance(60_000)
  await sleep(100)
  t.equal((await store.listSigningKeys()).length, 2, 'no rotation after close')
})

t.test('a configured key (JWT_PRIVATE_KEY) alone signs and verifies access tokens: the store keeps only the RS256 key', async (t) => {
  const store = await testStore(t)
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const ring = await createKeyRing({ store, clock: testClock(), log: silentLogger }, { ...options, privateKeyPem: pem })
  t.teardown(() => ring.close())
  const kid = decodePart(ring.signAccessToken({}), 0).kid
  t.same(ring.jwks.keys.map(key => key.kid), [kid])
  t.same(await store.listSigningKeys(), [], 'no key of the service in the store')
  await rotateSigningKey(store)
  t.equal(await ring.keyFor('another-kid'), undefined)
  await ring.reload()
  t.same(ring.jwks.keys.map(key => key.kid), [kid], 'a service key in the store is not used')
  const { rs256 } = await ring.providerKeys()
  t.same((await store.listSigningKeys()).map(key => key.algorithm).sort(), ['EdDSA', 'RS256'])
  t.same(ring.jwks.keys.map(key => key.kid), [kid, rs256.kid])
})

t.test('in production without SIGNING_KEY_ENCRYPTION_KEY the ring warns that the stored key is in clear', async (t) => {
  const lines: string[] = []
  const log: Logger = { ...silentLogger, warn: (first: object | string) => { lines.push(String(first)) } }
  const ring = await createKeyRing({ store: await testStore(t), clock: testClock(), log }, { ...options, warnWhenUnsealed: true })
  t.teardown(() => ring.close())
  t.match(lines, [/SIGNING_KEY_ENCRYPTION_KEY is not set/])
  const sealed = await createKeyRing({ store: await testStore(t), clock: testClock(), log }, { ...options, warnWhenUnsealed: true, signingKeyEncryptionKey: Buffer.alloc(32, 7) })
  t.teardown(() => sealed.close())
  t.equal(lines.length, 1, 'not with a sealing key')
})

t.test('the first call for the provider\'s keys stores one RS256 key, once per store, which another ring finds', async (t) => {
  const store = await testStore(t)
  const clock = testClock()
  const ring = await createKeyRing({ store, clock, log: silentLogger }, options)
  t.teardown(() => ring.close())
  t.same((await store.listSigningKeys()).map(key => key.algorithm), ['EdDSA'], 'not at the start')
  const [first, second] = await Promise.all([ring.providerKeys(), ring.providerKeys()])
  t.equal(first, second, 'calls together share one making')
  t.same((await store.listSigningKeys()).map(key => key.algorithm), ['EdDSA', 'RS256'])
  t.match(first, { service: { kty: 'OKP', alg: 'EdDSA', d: String }, rs256: { kty: 'RSA', alg: 'RS256', d: String, kid: /^[\w-]{43}$/ }, retired: [] })
  t.not(first.rs256.kid, first.service.kid)
  t.equal(await ring.providerKeys(), first, 'the same object while nothing changes')
  await ring.reload()
  t.equal(await ring.providerKeys(), first, 'a reload that changed nothing too (the provider is built again only for new keys)')
  t.equal(await ring.keyFor(first.rs256.kid), undefined, 'an RS256 key verifies no access token')

  const other = await createKeyRing({ store, clock, log: silentLogger }, options)
  t.teardown(() => other.close())
  t.equal((await other.providerKeys()).rs256.kid, first.rs256.kid, 'another instance takes the stored key')
  t.equal((await store.listSigningKeys()).length, 2)
  t.same((await ring.publishedJwks()).keys.map(key => key.kty), ['OKP', 'RSA'])
})

t.test('after an RS256 rotation the new key signs and the old one verifies, unsigning, until its ID tokens have expired', async (t) => {
  const store = await testStore(t)
  const clock = testClock()
  const ring = await createKeyRing({ store, clock, log: silentLogger }, options)
  t.teardown(() => ring.close())
  const before = await ring.providerKeys()
  clock.advance(1)
  const rotated = await rotateSigningKey(store, { algorithm: 'RS256', now: new Date(clock.now()) })
  await ring.reload()
  const after = await ring.providerKeys()
  t.equal(after.rs256.kid, rotated.kid, 'the new RS256 key signs')
  t.equal(after.service.kid, before.service.kid, 'the service\'s key is not rotated with it')
  t.same(after.retired.map(key => key.kid), [before.rs256.kid], 'the old one is kept to verify')
  t.notOk('d' in after.retired[0], 'as its public half only')
  const stored = await store.listSigningKeys()
  t.equal(stored.find(key => key.kid === before.rs256.kid)?.privateKeyPem, null, 'its private half is deleted')
  t.ok(stored.find(key => key.kid === before.service.kid)?.privateKeyPem, 'not the service key\'s')
  clock.advance(ID_TOKEN_TTL_SECONDS * 1000 + 1000 - 1)
  t.equal(await ring.providerKeys(), after, 'unchanged at an hour and a second less 1 ms')
  clock.advance(1)
  t.same((await ring.providerKeys()).retired, [], 'an hour and a second after, no longer')
  t.notOk(ring.jwks.keys.some(key => key.kid === before.rs256.kid), 'nor in the JWKS')
})

t.test('SIGNING_KEY_ROTATE_AFTER rotates the RS256 key by age too', async (t) => {
  const store = await testStore(t)
  const clock = testClock()
  const ring = await createKeyRing({ store, clock, log: silentLogger }, { ...options, reloadIntervalSeconds: 0.02, rotateAfterSeconds: 60 })
  t.teardown(() => ring.close())
  const first = await ring.providerKeys()
  clock.advance(60_000)
  t.ok(await eventually(async () => (await ring.providerKeys()).rs256.kid !== first.rs256.kid), 'a new RS256 key signs')
  t.same((await store.listSigningKeys()).map(key => key.algorithm).sort(), ['EdDSA', 'EdDSA', 'RS256', 'RS256'])
})

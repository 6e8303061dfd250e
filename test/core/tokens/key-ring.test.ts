import { generateKeyPairSync } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { SigningKeysStore } from '../../../db/store.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { createKeyRing, UNKNOWN_KID_RELOAD_GAP_MS, type KeyRingOptions } from '../../../core/tokens/key-ring.js'
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

t.test('after a rotation and a reload the new key signs, and the old one verifies until ACCESS_TOKEN_TTL + 1 s later', async (t) => {
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
  t.ok(await ring.keyFor(oldKid), 'the old key is still known')
  clock.advance(2999)
  t.equal(ring.jwks.keys.length, 2, 'still at 3 s less 1 ms')
  clock.advance(1)
  t.same(ring.jwks.keys.map(key => key.kid), [rotated.kid], 'retired 3 s after its successor came')
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

t.test('a configured key (JWT_PRIVATE_KEY) alone signs and verifies: the store is never read', async (t) => {
  const untouched = new Proxy({}, { get () { throw new Error('the store was used') } }) as SigningKeysStore
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const ring = await createKeyRing({ store: untouched, clock: testClock(), log: silentLogger }, { ...options, privateKeyPem: pem })
  t.teardown(() => ring.close())
  const kid = decodePart(ring.signAccessToken({}), 0).kid
  t.same(ring.jwks.keys.map(key => key.kid), [kid])
  t.equal(await ring.keyFor('another-kid'), undefined)
  await ring.reload()
  t.same(ring.jwks.keys.map(key => key.kid), [kid])
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

import { hash as argon2Hash } from '@node-rs/argon2'
import { readdirSync } from 'node:fs'
import t, { type Test } from 'tap'
import type { SettingsStore } from '../../../db/store.js'
import { silentLogger, type Logger } from '../../../core/logger.js'
import { HASH_PARAMETERS_SETTING } from '../../../core/passwords/parameters.js'
import { ARGON2ID_OPTIONS, createPasswords, type PasswordsOptions } from '../../../core/passwords/passwords.js'
import { testStore } from '../../fixtures/database.js'
import { argon2Foreign, bcryptHash, pbkdf2Hash, scryptHash } from '../../fixtures/foreign-hashes.js'

// OWASP's minimum, nothing measured: as the app's tests run (PASSWORD_HASH_TARGET=0ms).
const options: PasswordsOptions = { queueMax: 100, hashTargetMs: 0 }

async function start (t: Test, store: SettingsStore, log: Logger = silentLogger, startOptions = options) {
  const passwords = await createPasswords({ store, log }, startOptions)
  t.teardown(() => passwords.close())
  return passwords
}

/** A logger that keeps the messages of its info lines. */
function infoLines () {
  const messages: string[] = []
  const log: Logger = { ...silentLogger, info: (_object: object | string, message?: string) => { messages.push(message ?? '') } }
  return { log, messages }
}

t.test('a hashed password verifies; another password, or a malformed hash, does not', async (t) => {
  const passwords = await start(t, await testStore(t))
  const hash = await passwords.hash('correct horse battery staple')
  t.match(hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.equal(await passwords.verify(hash, 'correct horse battery staple'), true)
  t.equal(await passwords.verify(hash, 'Correct horse battery staple'), false)
  t.equal(await passwords.verify('not a hash', 'correct horse battery staple'), false, 'a mismatch, not a crash')
  t.equal(await passwords.verifyNothing('correct horse battery staple'), false, 'an unknown email is refused too')
})

t.test('the first start stores its parameters; the next start hashes with the stored ones and rehashes the others', async (t) => {
  const store = await testStore(t)
  const first = infoLines()
  await start(t, store, first.log)
  t.same(first.messages, ['password hash parameters calibrated to this host and stored'])
  t.ok(await store.readSetting(HASH_PARAMETERS_SETTING))

  // Raised by an operator since: three passes.
  await store.writeSetting(HASH_PARAMETERS_SETTING, JSON.stringify({ memoryCost: 19456, timeCost: 3, parallelism: 1 }))
  const next = infoLines()
  const passwords = await start(t, store, next.log)
  t.same(next.messages, [], 'nothing calibrated: the stored parameters are used')
  const hash = await passwords.hash('a password')
  t.match(hash, /^\$argon2id\$v=19\$m=19456,t=3,p=1\$/)
  t.equal(passwords.needsRehash(hash), false)
  t.equal(passwords.needsRehash(await argon2Hash('a password', ARGON2ID_OPTIONS)), true, 'a hash made with two passes is rehashed at the next login')
})

t.test('a full queue answers BUSY, never a wrong password', async (t) => {
  const passwords = await start(t, await testStore(t), silentLogger, { ...options, queueMax: 1 })
  const hash = await passwords.hash('a password')
  const results = await Promise.allSettled(Array.from({ length: 20 }, () => passwords.verify(hash, 'a password')))
  const refused = results.filter(result => result.status === 'rejected')
  t.ok(refused.length > 0, `${refused.length} of 20 refused`)
  t.match(refused.map(result => result.reason as unknown), Array(refused.length).fill({ code: 'BUSY' }))
  t.ok(results.every(result => result.status === 'rejected' || result.value), 'the others verified')
})

t.test('closed, the service ends its threads and refuses work', { skip: process.platform !== 'linux' && 'threads read from /proc' }, async (t) => {
  const before = readdirSync('/proc/self/task').length
  const passwords = await createPasswords({ store: await testStore(t), log: silentLogger }, options)
  t.ok(readdirSync('/proc/self/task').length > before, 'hashing threads started')
  await passwords.close()
  t.equal(readdirSync('/proc/self/task').length, before, 'and ended')
  await t.rejects(passwords.hash('a password'), /closed/)
})

t.test('a start that fails (the store down) ends the threads it started', { skip: process.platform !== 'linux' && 'threads read from /proc' }, async (t) => {
  const before = readdirSync('/proc/self/task').length
  const down: SettingsStore = {
    readSetting: async () => { throw new Error('store down') },
    writeSetting: async () => { throw new Error('store down') }
  }
  await t.rejects(createPasswords({ store: down, log: silentLogger }, options), /store down/)
  t.equal(readdirSync('/proc/self/task').length, before)
})

t.test('imported hashes of every family verify the right password only, and are rehashed at the next login', async (t) => {
  const passwords = await start(t, await testStore(t))
  const password = 'correct horse battery staple'
  const hashes = {
    bcrypt2a: bcryptHash(password, 4, '2a'),
    bcrypt2b: bcryptHash(password, 5, '2b'),
    bcrypt2y: bcryptHash(password, 4, '2y'),
    argon2id: await argon2Foreign(password, { algorithm: 2 }),
    argon2i: await argon2Foreign(password, { algorithm: 1 }),
    argon2d: await argon2Foreign(password, { algorithm: 0 }),
    argon2idVersion16: await argon2Foreign(password, { algorithm: 2, version: 0 }),
    scrypt: scryptHash(password, { ln: 12, r: 8, p: 1 }),
    pbkdf2sha1: pbkdf2Hash(password, { digest: 'sha1' }),
    pbkdf2sha256: pbkdf2Hash(password, { digest: 'sha256' }),
    pbkdf2sha512: pbkdf2Hash(password, { digest: 'sha512' }),
    pbkdf2passlib: pbkdf2Hash(password, { digest: 'sha256', passlib: true })
  }
  for (const [family, hash] of Object.entries(hashes)) {
    t.equal(await passwords.verify(hash, password), true, `${family} verifies`)
    t.equal(await passwords.verify(hash, `${password}!`), false, `${family}: another password does not`)
    t.equal(passwords.needsRehash(hash), true, `${family} is rehashed at the next login`)
  }
  // A flipped character of the stored key: a mismatch, never a crash.
  const tampered = hashes.scrypt.slice(0, -2) + (hashes.scrypt.endsWith('A') ? 'B' : 'A') + hashes.scrypt.slice(-1)
  t.equal(await passwords.verify(tampered, password), false)
})

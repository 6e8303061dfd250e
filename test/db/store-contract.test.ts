import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'
import type { AccountStore } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

/*
 * The store contract: every member of every aggregate interface (db/store/<aggregate>.ts) is exercised by a
 * test in test/db, which both backends run (SQLite in the main pass, PostgreSQL in scripts/test-postgres.mjs).
 * The first test holds the list to that: a member added to an interface without a test of its behaviour
 * fails it. The tests after it are the members no other file of test/db named.
 */

const STORE_FOLDER = new URL('../../db/store/', import.meta.url)
const TEST_FOLDER = new URL('./', import.meta.url)

/** The members of each `export interface <Name>Store` in db/store: its method names, by interface. */
function aggregateMembers (): Map<string, string[]> {
  const members = new Map<string, string[]>()
  for (const file of readdirSync(STORE_FOLDER).filter((name) => name.endsWith('.ts'))) {
    const source = readFileSync(new URL(file, STORE_FOLDER), 'utf8')
    for (const [, name, body] of source.matchAll(/^export interface (\w+Store)\b[^{]*\{\n([\s\S]*?)^\}/gm)) {
      // A member is a method signature at the interface's own indentation (two spaces).
      members.set(`${file}: ${name}`, [...body.matchAll(/^ {2}(\w+) ?(?:<[^>]*>)?\(/gm)].map(([, member]) => member))
    }
  }
  return members
}

t.test('every member of every store aggregate is named by a test of test/db', async (t) => {
  const tests = readdirSync(TEST_FOLDER).filter((name) => name.endsWith('.test.ts')).map((name) => readFileSync(new URL(name, TEST_FOLDER), 'utf8'))
  const aggregates = aggregateMembers()
  t.ok(aggregates.size >= 13, `the aggregates read: ${[...aggregates.keys()].join(', ')}`)
  for (const [aggregate, members] of aggregates) {
    t.ok(members.length > 0, `${aggregate} has members`)
    const untested = members.filter((member) => !tests.some((source) => source.includes(`.${member}(`)))
    t.same(untested, [], `${aggregate}: every member called by a test`)
  }
})

const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })
const inAMinute = () => new Date(Date.now() + 60_000)

t.test('settings: unset until written; written again replaces, unless onlyIfNone finds a value', async (t) => {
  const store = await testStore(t)
  t.equal(await store.readSetting('hash.parameters'), undefined)
  await store.writeSetting('hash.parameters', 'first')
  t.equal(await store.readSetting('hash.parameters'), 'first')
  await store.writeSetting('hash.parameters', 'second', { onlyIfNone: true })
  t.equal(await store.readSetting('hash.parameters'), 'first', 'the first instance\'s value is kept')
  await store.writeSetting('hash.parameters', 'third')
  t.equal(await store.readSetting('hash.parameters'), 'third')
  t.equal(await store.readSetting('other'), undefined, 'settings are by name')
})

t.test('a signing key\'s private half is replaced only while it is the one expected; null retires it', async (t) => {
  const store = await testStore(t)
  await store.addSigningKey({ kid: 'k1', algorithm: 'EdDSA', publicKeyPem: 'public', privateKeyPem: 'clear', createdAt: new Date() })
  t.equal(await store.replaceSigningKeyPrivateHalf('k1', 'clear', 'sealed'), true)
  t.equal((await store.listSigningKeys())[0].privateKeyPem, 'sealed')
  t.equal(await store.replaceSigningKeyPrivateHalf('k1', 'clear', 'sealed again'), false, 'another instance changed it first')
  t.equal((await store.listSigningKeys())[0].privateKeyPem, 'sealed', 'nothing written')
  t.equal(await store.replaceSigningKeyPrivateHalf('k1', 'sealed', null), true)
  t.match(await store.listSigningKeys(), [{ kid: 'k1', publicKeyPem: 'public', privateKeyPem: null }], 'retired: the public half stays')
  t.equal(await store.replaceSigningKeyPrivateHalf('nope', 'sealed', null), false, 'an unknown key')
})

t.test('the highest status index a session holds: null with none, the largest claimed after', async (t) => {
  const store = await testStore(t)
  t.equal(await store.highestStatusIndex(), null)
  const ada = await store.createUser(newUser('a@example.com'))
  for (const [id, index] of [['s1', 5], ['s2', 70_000], ['s3', 12]] as const) {
    await store.createSession({ id, userId: ada.id, userAgent: null, ip: null }, new Date())
    t.ok(await store.claimStatusIndex(id, index))
  }
  t.equal(await store.highestStatusIndex(), 70_000)
})

/** A user with a confirmed TOTP and `wrong` wrong codes counted against the account. */
async function userWithWrongCodes (store: AccountStore, wrong: number) {
  const user = await store.createUser(newUser('a@example.com'))
  await store.saveTotpSecret(user.id, 'secret', new Date())
  await store.confirmTotp(user.id, 100, ['r1'], new Date())
  await store.createMfaChallenge({ tokenHash: 'c', userId: user.id, expiresAt: inAMinute() }, new Date(), 1000)
  for (let i = 0; i < wrong; i++) await store.attemptMfaChallenge('c', null, new Date(), 1000, { maxWrongCodes: 1000 })
  return user
}

t.test('forgiving wrong second-factor codes lowers the account\'s count to at most the number kept', async (t) => {
  const store = await testStore(t)
  const user = await userWithWrongCodes(store, 5)
  const cap = { maxWrongCodes: 5 }
  await store.createMfaChallenge({ tokenHash: 'd', userId: user.id, expiresAt: inAMinute() }, new Date(), 1000)
  t.match(await store.attemptMfaChallenge('d', { totpStep: 101 }, new Date(), 1000, cap), { outcome: 'locked' }, 'five wrong codes: locked')
  await store.forgiveMfaFailures(user.id, 3)
  t.match(await store.attemptMfaChallenge('d', null, new Date(), 1000, cap), { outcome: 'refused' }, 'three kept: the fourth is judged')
  t.match(await store.attemptMfaChallenge('d', null, new Date(), 1000, cap), { outcome: 'refused', lockedNow: true }, 'the fifth reaches the cap again')
  t.match(await store.attemptMfaChallenge('d', { totpStep: 102 }, new Date(), 1000, cap), { outcome: 'locked' })
  await store.forgiveMfaFailures(user.id, 10)
  t.match(await store.attemptMfaChallenge('d', { totpStep: 102 }, new Date(), 1000, cap), { outcome: 'locked' }, 'it never raises the count')
})

t.test('voiding the MFA challenges marks every unused one of the user used; another user\'s stand', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  for (const [tokenHash, userId] of [['a1', ada.id], ['a2', ada.id], ['b1', bob.id]] as const) {
    await store.createMfaChallenge({ tokenHash, userId, expiresAt: inAMinute() }, new Date(), 5)
  }
  await store.voidMfaChallenges(ada.id, new Date())
  t.match(await store.findMfaChallenge('a1'), { usedAt: Date })
  t.match(await store.findMfaChallenge('a2'), { usedAt: Date })
  t.match(await store.findMfaChallenge('b1'), { usedAt: null })
  t.same(await store.attemptMfaChallenge('a1', { totpStep: 1 }, new Date(), 5, { maxWrongCodes: 1000 }), { outcome: 'invalid' }, 'a void challenge verifies nothing')
})

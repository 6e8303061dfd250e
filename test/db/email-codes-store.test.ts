import t from 'tap'
import type { AccountStore } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

/*
 * The mailed sign-in codes (db/store/email-codes.ts) on the backend under test: one live code per address,
 * quotas checked with the write, a cap on guesses that racing requests cannot pass, single use.
 */

const MINUTE = 60_000
const MAX = 5

async function issue (store: AccountStore, email: string, codeHash: string, now = new Date(), quotas: Array<{ since: Date, max: number }> = []) {
  return await store.issueEmailCode({ email, codeHash, expiresAt: new Date(now.getTime() + 10 * MINUTE) }, now, { quotas })
}

t.test('a new code voids the older; a reservation finds the newest, with its count', async (t) => {
  const store = await testStore(t)
  t.equal(await issue(store, 'a@example.test', 'first'), true)
  t.equal(await issue(store, 'a@example.test', 'second'), true)
  await issue(store, 'b@example.test', 'other address')
  const reserved = await store.reserveEmailCodeAttempt('a@example.test', new Date(), MAX)
  t.match(reserved, { email: 'a@example.test', codeHash: 'second', attempts: 1, usedAt: null })
  t.equal((await store.reserveEmailCodeAttempt('a@example.test', new Date(), MAX))?.attempts, 2, 'each reservation counts')
  t.equal(await store.reserveEmailCodeAttempt('nobody@example.test', new Date(), MAX), undefined, 'none for an address without a code')
})

t.test('at most the cap of guesses are reserved, one by one or racing', async (t) => {
  const store = await testStore(t)
  await issue(store, 'one@example.test', 'hash')
  for (let n = 1; n <= MAX; n++) t.equal((await store.reserveEmailCodeAttempt('one@example.test', new Date(), MAX))?.attempts, n)
  t.equal(await store.reserveEmailCodeAttempt('one@example.test', new Date(), MAX), undefined, 'burnt')

  await issue(store, 'race@example.test', 'hash')
  const racing = await Promise.all(Array.from({ length: 20 }, () => store.reserveEmailCodeAttempt('race@example.test', new Date(), MAX)))
  const granted = racing.filter(reservation => reservation !== undefined)
  t.equal(granted.length, MAX, `of 20 racing guesses, ${MAX} reserved`)
  t.same(granted.map(reservation => reservation?.attempts).sort(), [1, 2, 3, 4, 5], 'each with its own count')
})

t.test('a released guess is given back; a code is used once, not after it expired', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  await issue(store, 'c@example.test', 'hash', now)
  const reserved = await store.reserveEmailCodeAttempt('c@example.test', now, MAX)
  if (reserved === undefined) throw new Error('no live code')
  await store.releaseEmailCodeAttempt(reserved.id)
  t.equal((await store.reserveEmailCodeAttempt('c@example.test', now, MAX))?.attempts, 1, 'the count went back')
  t.equal(await store.useEmailCode(reserved.id, new Date(now.getTime() + 11 * MINUTE)), false, 'expired: not used')
  const uses = await Promise.all([store.useEmailCode(reserved.id, now), store.useEmailCode(reserved.id, now)])
  t.same(uses.sort(), [false, true], 'of two racing uses, one wins')
  t.equal(await store.reserveEmailCodeAttempt('c@example.test', now, MAX), undefined, 'a used code takes no more guesses')
  t.equal(await store.reserveEmailCodeAttempt('c@example.test', new Date(now.getTime()), MAX), undefined)
})

t.test('an expired code takes no guess; expired codes are pruned', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  await issue(store, 'd@example.test', 'hash', now)
  t.equal(await store.reserveEmailCodeAttempt('d@example.test', new Date(now.getTime() + 10 * MINUTE), MAX), undefined, 'at its expiry, dead')
  t.equal(await store.deleteExpiredEmailCodes(new Date(now.getTime() + 5 * MINUTE)), 0, 'not expired yet at that time')
  t.equal(await store.deleteExpiredEmailCodes(new Date(now.getTime() + 11 * MINUTE)), 1)
})

t.test('quotas: no code past the count since a time, checked with the write even when requests race', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  const hour = [{ since: new Date(now.getTime() - 60 * MINUTE), max: 3 }]
  const racing = await Promise.all(Array.from({ length: 8 }, (_, n) => issue(store, 'q@example.test', `hash-${n}`, now, hour)))
  t.equal(racing.filter(Boolean).length, 3, 'three issued of eight racing')
  t.equal(await issue(store, 'q@example.test', 'late', now, hour), false)
  t.equal(await issue(store, 'other@example.test', 'free', now, hour), true, 'another address has its own quota')
  t.equal(await issue(store, 'q@example.test', 'next hour', new Date(now.getTime() + 61 * MINUTE), [{ since: new Date(now.getTime() + MINUTE), max: 3 }]), true, 'older codes stop counting')
  const live = await store.reserveEmailCodeAttempt('q@example.test', new Date(now.getTime() + 61 * MINUTE), MAX)
  t.equal(live?.codeHash, 'next hour', 'one live code: the newest')
})

t.test('a code and its mail are written together', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  await store.issueEmailCode({ email: 'm@example.test', codeHash: 'hash', expiresAt: new Date(now.getTime() + 10 * MINUTE) }, now, {
    mail: { to: 'm@example.test', subject: 'Your sign-in code', text: 'code' }
  })
  t.equal(await store.countPendingMails(), 1)
})

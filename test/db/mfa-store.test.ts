import t from 'tap'
import { testStore } from '../fixtures/database.js'

const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })
const later = (milliseconds: number) => new Date(Date.now() + milliseconds)
const MAX_FAILURES = 5
// The account-wide cap of wrong codes is tested in test/security/mfa-guess-cap.test.ts: out of the way here.
const UNCAPPED = { maxWrongCodes: 1_000_000 }

t.test('a TOTP secret is replaced while unconfirmed, kept once confirmed, and deleted with its recovery codes and challenges', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  t.equal(await store.findTotp(ada.id), undefined)
  t.equal(await store.confirmTotp(ada.id, 10, ['h1'], new Date()), false, 'nothing to confirm')
  t.equal(await store.saveTotpSecret(ada.id, 'first', new Date()), true)
  t.equal(await store.saveTotpSecret(ada.id, 'second', new Date()), true)
  t.match(await store.findTotp(ada.id), { userId: ada.id, secret: 'second', confirmedAt: null, lastUsedStep: null })
  t.equal(await store.confirmTotp(ada.id, 10, ['h1', 'h2', 'h3'], new Date()), true)
  t.equal(await store.confirmTotp(ada.id, 11, ['h4'], new Date()), false, 'only once')
  t.match(await store.findTotp(ada.id), { secret: 'second', confirmedAt: Date, lastUsedStep: 10 })
  t.equal(await store.saveTotpSecret(ada.id, 'third', new Date()), false, 'a confirmed secret is not replaced')
  t.equal((await store.findTotp(ada.id))?.secret, 'second')
  t.equal(await store.countRecoveryCodes(ada.id), 3)

  t.equal(await store.replaceRecoveryCodes(ada.id, ['n1', 'n2'], new Date()), true)
  t.equal(await store.countRecoveryCodes(ada.id), 2, 'the old set is gone')
  await store.createMfaChallenge({ tokenHash: 'c1', userId: ada.id, expiresAt: later(60_000) }, new Date(), MAX_FAILURES)
  t.match(await store.attemptMfaChallenge('c1', { recoveryCodeHash: 'h1' }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'refused' }, 'an old code does not pass')

  t.equal(await store.deleteTotp(ada.id), true)
  t.equal(await store.deleteTotp(ada.id), false)
  t.equal(await store.findTotp(ada.id), undefined)
  t.equal(await store.countRecoveryCodes(ada.id), 0)
  t.equal(await store.findMfaChallenge('c1'), undefined, 'pending challenges go too')
  t.equal(await store.replaceRecoveryCodes(ada.id, ['n3'], new Date()), false, 'no codes without TOTP')
  t.equal(await store.countRecoveryCodes(ada.id), 0)

  await store.saveTotpSecret(ada.id, 'again', new Date())
  await store.confirmTotp(ada.id, 20, ['r1'], new Date())
  await store.createMfaChallenge({ tokenHash: 'c2', userId: ada.id, expiresAt: later(60_000) }, new Date(), MAX_FAILURES)
  t.equal(await store.deleteUser(ada.id), true)
  t.equal(await store.findTotp(ada.id), undefined, 'deleted with the user')
  t.equal(await store.findMfaChallenge('c2'), undefined)
})

t.test('a challenge passes once with a newer TOTP step or an unused recovery code; replays and wrong codes count failures until it is void', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  await store.saveTotpSecret(ada.id, 'secret', new Date())
  await store.confirmTotp(ada.id, 100, ['r1', 'r2'], new Date())
  const challenge = async (tokenHash: string, expiresInMs = 60_000) =>
    await store.createMfaChallenge({ tokenHash, userId: ada.id, expiresAt: later(expiresInMs) }, new Date(), MAX_FAILURES)

  await challenge('a')
  t.match(await store.findMfaChallenge('a'), { tokenHash: 'a', userId: ada.id, failures: 0, usedAt: null, expiresAt: Date })
  t.same(await store.attemptMfaChallenge('a', { totpStep: 100 }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'refused', userId: ada.id, failures: 1 }, 'the used step')
  t.same(await store.attemptMfaChallenge('a', { totpStep: 99 }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'refused', userId: ada.id, failures: 2 }, 'an older one')
  t.same(await store.attemptMfaChallenge('a', null, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'refused', userId: ada.id, failures: 3 })
  t.same(await store.attemptMfaChallenge('a', { totpStep: 101 }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'passed', userId: ada.id })
  t.equal((await store.findTotp(ada.id))?.lastUsedStep, 101)
  t.same(await store.attemptMfaChallenge('a', { totpStep: 102 }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'invalid' }, 'single use')
  t.same(await store.attemptMfaChallenge('unknown', { totpStep: 102 }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'invalid' })

  await challenge('b')
  t.same(await store.attemptMfaChallenge('b', { recoveryCodeHash: 'r1' }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'passed', userId: ada.id })
  t.equal(await store.countRecoveryCodes(ada.id), 1)
  await challenge('c')
  t.match(await store.attemptMfaChallenge('c', { recoveryCodeHash: 'r1' }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'refused' }, 'a recovery code works once')
  for (let failure = 2; failure <= MAX_FAILURES; failure++) {
    t.same(await store.attemptMfaChallenge('c', null, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'refused', userId: ada.id, failures: failure })
  }
  t.same(await store.attemptMfaChallenge('c', { recoveryCodeHash: 'r2' }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'invalid' }, 'void after the fifth failure')
  t.equal(await store.countRecoveryCodes(ada.id), 1, 'and the code it was given is not spent')

  await challenge('d', 10)
  await new Promise(resolve => setTimeout(resolve, 20))
  t.same(await store.attemptMfaChallenge('d', { recoveryCodeHash: 'r2' }, new Date(), MAX_FAILURES, UNCAPPED), { outcome: 'invalid' }, 'expired')

  await challenge('e')
  t.equal(await store.findMfaChallenge('a'), undefined, 'a new challenge clears the user\'s used, void and expired ones')
  t.equal(await store.findMfaChallenge('c'), undefined)
  t.equal(await store.findMfaChallenge('d'), undefined)
  t.ok(await store.findMfaChallenge('e'))
})

t.test('parallel attempts: one TOTP step over several challenges, one recovery code, one challenge with two proofs: one passes each', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  await store.saveTotpSecret(ada.id, 'secret', new Date())
  await store.confirmTotp(ada.id, 100, ['r1', 'r2', 'r3'], new Date())
  const challenges = async (...hashes: string[]) => {
    for (const tokenHash of hashes) await store.createMfaChallenge({ tokenHash, userId: ada.id, expiresAt: later(60_000) }, new Date(), MAX_FAILURES)
  }
  const outcomes = async (attempts: Array<Promise<{ outcome: string }>>) => (await Promise.all(attempts)).map(attempt => attempt.outcome).sort()

  await challenges('s1', 's2', 's3', 's4')
  t.same(await outcomes(['s1', 's2', 's3', 's4'].map(hash => store.attemptMfaChallenge(hash, { totpStep: 101 }, new Date(), MAX_FAILURES, UNCAPPED))),
    ['passed', 'refused', 'refused', 'refused'], 'one TOTP step')
  await challenges('r1a', 'r1b', 'r1c')
  t.same(await outcomes(['r1a', 'r1b', 'r1c'].map(hash => store.attemptMfaChallenge(hash, { recoveryCodeHash: 'r1' }, new Date(), MAX_FAILURES, UNCAPPED))),
    ['passed', 'refused', 'refused'], 'one recovery code')
  await challenges('one')
  t.same(await outcomes([
    store.attemptMfaChallenge('one', { totpStep: 102 }, new Date(), MAX_FAILURES, UNCAPPED),
    store.attemptMfaChallenge('one', { recoveryCodeHash: 'r2' }, new Date(), MAX_FAILURES, UNCAPPED),
    store.attemptMfaChallenge('one', { recoveryCodeHash: 'r3' }, new Date(), MAX_FAILURES, UNCAPPED)
  ]), ['invalid', 'invalid', 'passed'], 'one challenge')
  const spent = (await store.findTotp(ada.id))?.lastUsedStep === 102 ? 0 : 1
  t.equal(await store.countRecoveryCodes(ada.id), 2 - spent, 'only the proof that passed was spent')
})

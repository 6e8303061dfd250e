import t from 'tap'
import { openStore } from '../../db/open.js'
import { testDatabaseUrl, testStore } from '../fixtures/database.js'

const mail = (subject: string) => ({ to: 'ada@example.com', subject, text: `body of ${subject}` })
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms)
const LEASE = 60_000
const subjects = (claimed: Array<{ subject: string }>) => claimed.map(mail => mail.subject)

t.test('a claimed mail is leased: nobody claims it again until the lease ends, then it is claimed with one more attempt', async (t) => {
  const store = await testStore(t)
  await store.enqueueMail(mail('one'), at(0))
  await store.enqueueMail(mail('two'), at(1))
  const claimed = await store.claimMails(at(10), at(10 + LEASE), 1)
  t.match(claimed, [{ subject: 'one', to: 'ada@example.com', text: 'body of one', attempts: 1 }], 'oldest first, its first attempt')
  t.same(subjects(await store.claimMails(at(20), at(20 + LEASE), 5)), ['two'], 'the leased one is not claimed again')
  t.same(await store.claimMails(at(30), at(30 + LEASE), 5), [])
  const again = await store.claimMails(at(10 + LEASE), at(10 + 2 * LEASE), 5)
  t.same(subjects(again), ['one'], 'a lease that ran out (its worker died) frees the mail')
  t.equal(again[0].attempts, 2, 'with one more attempt')
  t.same(subjects(await store.claimMails(at(20 + LEASE), at(20 + 2 * LEASE), 5)), ['two'], 'each at the end of its own lease')
  t.equal(await store.countPendingMails(), 2)
})

t.test('a mail not yet due is not claimed; a retry makes it due later, unclaimed', async (t) => {
  const store = await testStore(t)
  await store.enqueueMail(mail('later'), at(0))
  const [claimed] = await store.claimMails(at(0), at(LEASE), 1)
  await store.retryMail(claimed.id, at(5000), 'connection refused')
  t.same(await store.claimMails(at(4999), at(4999 + LEASE), 1), [], 'not before retryAt')
  t.match(await store.claimMails(at(5000), at(5000 + LEASE), 1), [{ id: claimed.id, attempts: 2 }], 'at retryAt, though its lease had not run out')
})

t.test('sent and given-up mails are never claimed, count as pending no more, and are pruned after they finished', async (t) => {
  const store = await testStore(t)
  for (const subject of ['sent', 'failed', 'pending']) await store.enqueueMail(mail(subject), at(0))
  const [sent, failed] = await store.claimMails(at(0), at(LEASE), 2)
  await store.markMailSent(sent.id, at(100))
  await store.markMailFailed(failed.id, at(200), 'refused')
  t.equal(await store.countPendingMails(), 1)
  t.same(subjects(await store.claimMails(at(LEASE), at(2 * LEASE), 5)), ['pending'], 'only the pending one')
  t.equal(await store.pruneMails(at(99), 100), 0, 'nothing finished that early')
  t.equal(await store.pruneMails(at(150), 100), 1, 'the sent one')
  t.equal(await store.pruneMails(at(1000), 100), 1, 'the given-up one')
  t.equal(await store.pruneMails(at(1000), 100), 0, 'a pending mail is never pruned')
  t.equal(await store.countPendingMails(), 1)
})

t.test('a one-time token and the mail of its link are written together, or neither when a quota refuses', async (t) => {
  const store = await testStore(t)
  const user = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'x' })
  const token = (n: number) => ({ tokenHash: `hash-${n}`, userId: user.id, purpose: 'reset_password' as const, email: user.email, expiresAt: at(3_600_000) })
  const quota = [{ since: at(-1000), max: 1 }]
  t.equal(await store.issueOneTimeToken(token(1), at(0), { liveLimit: 3, quotas: quota, mail: mail('first link') }), true)
  t.equal(await store.issueOneTimeToken(token(2), at(1), { liveLimit: 3, quotas: quota, mail: mail('second link') }), false)
  t.equal(await store.findOneTimeToken('hash-2'), undefined)
  t.same(subjects(await store.claimMails(at(10), at(10 + LEASE), 5)), ['first link'], 'only the issued token\'s mail')
})

t.test('two stores on one database claiming at once never claim one mail twice', async (t) => {
  // Two connections (two processes on one SQLite file, or two PostgreSQL instances).
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const first = await openStore(databaseUrl)
  t.teardown(() => first.close())
  const second = await openStore(databaseUrl)
  t.teardown(() => second.close())
  const count = 60
  for (let n = 0; n < count; n++) await first.enqueueMail(mail(`mail ${n}`), at(0))
  const claims = await Promise.all(Array.from({ length: 40 }, (_, n) => (n % 2 === 0 ? first : second).claimMails(at(10), at(10 + LEASE), 2)))
  const ids = claims.flat().map(claimed => claimed.id)
  t.equal(ids.length, count, 'every mail claimed')
  t.equal(new Set(ids).size, count, 'none twice')
})

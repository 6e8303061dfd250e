import t from 'tap'
import type { ClaimedMail } from '../../../db/store.js'
import { silentLogger } from '../../../core/logger.js'
import { mailSender } from '../../../core/mail/mail-outbox.js'
import { failureReason, outboxSays, OutboxWorker, storeQueue, type OutboxQueue } from '../../../core/outbox/outbox-worker.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'

/** An outbox of one mail in memory: due from `dueAt`, claimed with one more attempt, recording what the worker tells it. */
function oneMailQueue (clock: TestClock) {
  const calls: string[] = []
  const mail = { id: 1, to: 'ada@example.com', subject: 'Hi', text: 'hello', attempts: 0 }
  let dueAt = clock.now()
  let claimed = false
  let finished = false
  const queue: OutboxQueue<ClaimedMail> = {
    async claim (now) {
      if (claimed || finished || now.getTime() < dueAt) return []
      claimed = true
      mail.attempts += 1
      return [{ ...mail }]
    },
    async markDone () { calls.push('sent'); finished = true },
    async retry (id, retryAt) { calls.push(`retry in ${retryAt.getTime() - clock.now()} ms`); dueAt = retryAt.getTime(); claimed = false },
    async markFailed () { calls.push('failed'); finished = true }
  }
  return { calls, queue }
}

const refused = async (): Promise<boolean> => { throw new Error('421 try later') }

t.test('a failed attempt is retried when the injected clock reaches its due time, with backoff, then given up', async (t) => {
  const clock = testClock()
  const { calls, queue } = oneMailQueue(clock)
  const worker = new OutboxWorker({ queue, sender: mailSender({ deliver: refused, retryDelayMs: 60_000 }), clock, log: silentLogger, maxAttempts: 3 })
  t.teardown(() => worker.stop())
  worker.wake()
  await worker.idle()
  t.same(calls, ['retry in 60000 ms'], 'the first retry is due a minute later on the service clock')
  worker.wake()
  await worker.idle()
  t.same(calls, ['retry in 60000 ms'], 'not before: the clock has not moved (no real time is read)')
  clock.advance(60_000)
  worker.wake()
  await worker.idle()
  t.same(calls, ['retry in 60000 ms', 'retry in 120000 ms'], 'then twice the wait')
  clock.advance(120_000)
  worker.wake()
  await worker.idle()
  t.same(calls, ['retry in 60000 ms', 'retry in 120000 ms', 'failed'], 'given up after maxAttempts')
  t.equal(worker.failed, 1)
  t.equal(worker.sent, 0)
})

t.test('a row sent nowhere (mail disabled) is done but not counted as sent', async (t) => {
  const clock = testClock()
  const { calls, queue } = oneMailQueue(clock)
  const worker = new OutboxWorker({ queue, sender: mailSender({ deliver: async () => false, retryDelayMs: 1000 }), clock, log: silentLogger, maxAttempts: 3 })
  worker.wake()
  await worker.idle()
  t.same(calls, ['sent'])
  t.equal(worker.sent, 0)
  await worker.stop()
})

t.test('shutdown waits for a delivery under way, but not for one that hangs', async (t) => {
  const clock = testClock()
  const finishing = oneMailQueue(clock)
  const quick = new OutboxWorker({
    queue: finishing.queue,
    sender: mailSender({ deliver: async () => { await new Promise(resolve => setTimeout(resolve, 50)); return true }, retryDelayMs: 1000, stopWaitMs: 2000 }),
    clock,
    log: silentLogger,
    maxAttempts: 8
  })
  quick.start()
  await new Promise(resolve => setTimeout(resolve, 10))
  await quick.stop()
  t.same(finishing.calls, ['sent'], 'the delivery under way finished and was recorded')
  t.equal(quick.sent, 1)

  const hanging = oneMailQueue(clock)
  const state = { delivering: false }
  const stuck = new OutboxWorker({
    queue: hanging.queue,
    sender: mailSender({ deliver: async () => { state.delivering = true; return await new Promise<boolean>(() => {}) }, retryDelayMs: 1000, stopWaitMs: 100 }),
    clock,
    log: silentLogger,
    maxAttempts: 8
  })
  stuck.start()
  while (!state.delivering) await new Promise(resolve => setTimeout(resolve, 5))
  const started = Date.now()
  await stuck.stop()
  const took = Date.now() - started
  t.ok(took >= 90 && took < 1000, `stop gave up on the hanging delivery after ${took} ms`)
  t.same(hanging.calls, [], 'nothing recorded: the mail stays claimed, to be tried again after its lease')
})

t.test("storeQueue calls the store's members it names, on the store", async (t) => {
  const calls: string[] = []
  const store = {
    prefix: 'mail',
    async claimThings (this: { prefix: string }, now: Date, until: Date, limit: number) { calls.push(`${this.prefix} claim ${limit}`); return [] },
    async doneThing (id: number) { calls.push(`done ${id}`) },
    async retryThing (id: number, at: Date, error: string) { calls.push(`retry ${id} ${error}`) },
    async failThing (id: number, now: Date, error: string) { calls.push(`failed ${id} ${error}`) }
  }
  const queue = storeQueue<ClaimedMail, { claim: 'claimThings', markDone: 'doneThing', retry: 'retryThing', markFailed: 'failThing' }>(
    store, { claim: 'claimThings', markDone: 'doneThing', retry: 'retryThing', markFailed: 'failThing' })
  t.same(await queue.claim(new Date(), new Date(), 3), [])
  await queue.markDone(1, new Date())
  await queue.retry(2, new Date(), 'busy')
  await queue.markFailed(3, new Date(), 'gone')
  t.same(calls, ['mail claim 3', 'done 1', 'retry 2 busy', 'failed 3 gone'])
})

t.test("a failure's reason keeps its cause's message; the log lines name the outbox and its setting", async (t) => {
  t.equal(failureReason(new Error('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') })), 'fetch failed: connect ECONNREFUSED 127.0.0.1:9')
  t.equal(failureReason(new Error('421 try later')), '421 try later')
  t.equal(failureReason('plain'), 'plain')
  t.same(outboxSays({ outbox: 'webhook', row: 'event', done: 'delivered', again: 'delivered again', maxAttemptsSetting: 'WEBHOOK_MAX_ATTEMPTS' }), {
    unread: 'webhook outbox not read; trying again shortly',
    hanging: 'shutdown left a webhook delivery hanging; its event will be delivered again after the next start',
    givenUp: 'webhook given up after WEBHOOK_MAX_ATTEMPTS attempts',
    retried: 'webhook not delivered; it will be retried'
  })
})

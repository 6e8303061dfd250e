import t from 'tap'
import type { ClaimedMail } from '../../../db/store.js'
import { silentLogger } from '../../../core/logger.js'
import { OutboxWorker } from '../../../core/mail/outbox-worker.js'

/** A store with one mail to claim, recording what the worker tells it. */
function oneMailStore () {
  const calls: string[] = []
  let claimable: ClaimedMail | undefined = { id: 1, to: 'ada@example.com', subject: 'Hi', text: 'hello', attempts: 1 }
  return {
    calls,
    store: {
      async claimMails () {
        const mail = claimable
        claimable = undefined
        return mail === undefined ? [] : [mail]
      },
      async markMailSent () { calls.push('sent') },
      async retryMail () { calls.push('retry') },
      async markMailFailed () { calls.push('failed') }
    }
  }
}

t.test('shutdown waits for a delivery under way, but not for one that hangs', async (t) => {
  const finishing = oneMailStore()
  const quick = new OutboxWorker({
    store: finishing.store,
    deliver: async () => { await new Promise(resolve => setTimeout(resolve, 50)); return true },
    maxAttempts: 8,
    retryDelayMs: 1000,
    log: silentLogger,
    stopWaitMs: 2000
  })
  quick.start()
  await new Promise(resolve => setTimeout(resolve, 10))
  await quick.stop()
  t.same(finishing.calls, ['sent'], 'the delivery under way finished and was recorded')

  const hanging = oneMailStore()
  const state = { delivering: false }
  const stuck = new OutboxWorker({
    store: hanging.store,
    deliver: async () => { state.delivering = true; return await new Promise<boolean>(() => {}) },
    maxAttempts: 8,
    retryDelayMs: 1000,
    log: silentLogger,
    stopWaitMs: 100
  })
  stuck.start()
  while (!state.delivering) await new Promise(resolve => setTimeout(resolve, 5))
  const started = Date.now()
  await stuck.stop()
  const took = Date.now() - started
  t.ok(took >= 90 && took < 1000, `stop gave up on the hanging delivery after ${took} ms`)
  t.same(hanging.calls, [], 'nothing recorded: the mail stays claimed, to be tried again after its lease')
})

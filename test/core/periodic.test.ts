import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { runPeriodically } from '../../core/periodic.js'

t.test('a periodic task runs on its interval, one run at a time', async (t) => {
  let started = 0
  let concurrent = 0
  let mostConcurrent = 0
  const task = runPeriodically(5, async () => {
    started++
    concurrent++
    mostConcurrent = Math.max(mostConcurrent, concurrent)
    await sleep(20)
    concurrent--
  }, { onError: error => t.error(error) })
  await sleep(60)
  await task.stop()
  t.ok(started >= 2, `ran again after a run ended (${started} runs)`)
  t.equal(mostConcurrent, 1, 'ticks during a run do not start a second one')
})

t.test('a failed run is handed to onError and the next tick runs again', async (t) => {
  const errors: unknown[] = []
  let runs = 0
  const task = runPeriodically(5, async () => {
    runs++
    if (runs === 1) throw new Error('store down')
  }, { onError: error => errors.push(error) })
  await task.runNow()
  t.equal(errors.length, 1)
  t.match(errors[0], { message: 'store down' })
  await task.runNow()
  t.equal(runs, 2, 'the task is tried again')
  await task.stop()
})

t.test('stop waits for the run under way and no run starts after it', async (t) => {
  let finished = false
  let runs = 0
  const task = runPeriodically(1000, async () => {
    runs++
    await sleep(30)
    finished = true
  }, { onError: error => t.error(error) })
  const run = task.runNow()
  await task.stop()
  t.ok(finished, 'the run under way ended before stop resolved')
  await task.runNow()
  t.equal(runs, 1, 'runNow after stop does nothing')
  await run
})

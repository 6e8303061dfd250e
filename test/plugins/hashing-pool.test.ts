import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { setTimeout } from 'node:timers/promises'
import { test } from 'tap'
import { ARGON2ID_OPTIONS } from '../../core/passwords/passwords.js'
import { createHashingPool } from '../../core/passwords/hashing-pool.js'

test('the hashing pool hashes and verifies on its threads, more tasks than threads', async (t) => {
  const pool = createHashingPool({ size: 2 })
  t.teardown(() => pool.close())
  const hashes = await Promise.all(['one password', 'two password', 'three password'].map((password) =>
    pool.run({ op: 'hash', password, options: ARGON2ID_OPTIONS })))
  for (const hash of hashes) t.match(hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.equal(await pool.run({ op: 'verify', passwordHash: hashes[1] as string, password: 'two password' }), true)
  t.equal(await pool.run({ op: 'verify', passwordHash: hashes[1] as string, password: 'one password' }), false)
  await t.rejects(pool.run({ op: 'verify', passwordHash: 'not a hash', password: 'x' }), 'a malformed hash fails its task')
  t.equal(await pool.run({ op: 'verify', passwordHash: hashes[0] as string, password: 'one password' }), true, 'and the pool goes on')
})

test('hashing threads run at the lowest CPU priority', { skip: process.platform !== 'linux' && 'thread priorities read from /proc' }, async (t) => {
  const niceOf = (thread: string) => Number(readFileSync(`/proc/self/task/${thread}/stat`, 'utf8').split(') ')[1].split(' ')[16])
  const before = new Set(readdirSync('/proc/self/task'))
  const pool = createHashingPool({ size: 2 })
  t.teardown(() => pool.close())
  await Promise.all([1, 2].map(() => pool.run({ op: 'hash', password: 'a password', options: ARGON2ID_OPTIONS })))
  const lowered = readdirSync('/proc/self/task').filter((thread) => !before.has(thread) && niceOf(thread) === 19)
  t.ok(lowered.length >= 2, `two threads at nice 19 (found ${lowered.length})`)
  t.equal(niceOf(String(process.pid)), 0, 'the event loop keeps its priority')
})

test('hashing threads give way to the event loop at once (SCHED_IDLE)', { skip: (process.platform !== 'linux' || spawnSync('chrt', ['--help']).error !== undefined) && 'needs Linux and util-linux chrt' }, async (t) => {
  const SCHED_IDLE = 5
  const policyOf = (thread: string) => Number(readFileSync(`/proc/self/task/${thread}/stat`, 'utf8').split(') ')[1].split(' ')[38])
  const before = new Set(readdirSync('/proc/self/task'))
  const pool = createHashingPool({ size: 2 })
  t.teardown(() => pool.close())
  await Promise.all([1, 2].map(() => pool.run({ op: 'hash', password: 'a password', options: ARGON2ID_OPTIONS })))
  // The policy is asked for without blocking the thread's start: give chrt its moment.
  const idle = () => readdirSync('/proc/self/task').filter((thread) => !before.has(thread) && policyOf(thread) === SCHED_IDLE)
  for (let waited = 0; idle().length < 2 && waited < 5000; waited += 50) await setTimeout(50)
  t.equal(idle().length, 2, 'both hashing threads are SCHED_IDLE')
  t.equal(policyOf(String(process.pid)), 0, 'the event loop stays SCHED_OTHER')
})

test('a pool starts its threads with its first tasks, never more than it needs', { skip: process.platform !== 'linux' && 'threads counted in /proc' }, async (t) => {
  const threads = () => readdirSync('/proc/self/task').length
  const before = threads()
  const pool = createHashingPool({ size: 2 })
  t.teardown(() => pool.close())
  t.equal(threads(), before, 'none before a task')
  await pool.run({ op: 'hash', password: 'a password', options: ARGON2ID_OPTIONS })
  await pool.run({ op: 'hash', password: 'a password', options: ARGON2ID_OPTIONS })
  const afterOne = threads()
  t.ok(afterOne > before, 'one for the first task')
  await Promise.all([1, 2].map(() => pool.run({ op: 'hash', password: 'a password', options: ARGON2ID_OPTIONS })))
  t.ok(threads() > afterOne, 'a second once two tasks came together')
})

test('a thread has its next task at hand: it goes on while the event loop is busy', { skip: process.platform !== 'linux' && 'the thread watched in /proc' }, async (t) => {
  const statOf = (thread: string) => readFileSync(`/proc/self/task/${thread}/stat`, 'utf8').split(') ')[1].split(' ')
  const before = new Set(readdirSync('/proc/self/task'))
  const pool = createHashingPool({ size: 1 })
  t.teardown(() => pool.close())
  await pool.run({ op: 'hash', password: 'the thread is up', options: ARGON2ID_OPTIONS })
  const [thread] = readdirSync('/proc/self/task').filter((id) => !before.has(id) && Number(statOf(id)[16]) === 19)
  const cpuTicks = () => Number(statOf(thread)[11]) + Number(statOf(thread)[12])
  const ticksBefore = cpuTicks()
  const answered: string[] = []
  const taken = ['first', 'second'].map((password) => pool.run({ op: 'hash', password, options: ARGON2ID_OPTIONS }).then(() => { answered.push(password) }))
  // The event loop sleeps, as if busy with requests, until the thread has worked and then gone idle
  // (twice in a row, 50 ms apart): a thread at SCHED_IDLE on a busy machine may take a while.
  const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
  let idleChecks = 0
  for (const deadline = Date.now() + 60_000; idleChecks < 2 && Date.now() < deadline;) {
    sleep(50)
    idleChecks = cpuTicks() > ticksBefore && statOf(thread)[0] === 'S' ? idleChecks + 1 : 0
  }
  await new Promise((resolve) => setImmediate(resolve))
  t.same(answered, ['first', 'second'], 'both answers were waiting: the second was not handed over after the first answer was read')
  await Promise.all(taken)
})

test('a closed pool refuses work', async (t) => {
  const pool = createHashingPool({ size: 1 })
  await pool.close()
  await t.rejects(pool.run({ op: 'hash', password: 'a password', options: ARGON2ID_OPTIONS }), /closed/)
})

test('closing the pool lets the work it took finish', async (t) => {
  const pool = createHashingPool({ size: 1 })
  // More tasks than threads: one runs, two wait in the queue when close() is called.
  const taken = ['one', 'two', 'three'].map((password) => pool.run({ op: 'hash', password, options: ARGON2ID_OPTIONS }))
  await pool.close()
  for (const hash of await Promise.all(taken)) t.match(hash, /^\$argon2id\$/)
  await t.rejects(pool.run({ op: 'hash', password: 'four', options: ARGON2ID_OPTIONS }), /closed/, 'and then takes no more')
})

/** Timers the test fires by hand: the idle time passes when it says so. */
function fakeTimers () {
  const pending = new Map<number, { callback: () => void, ms: number }>()
  let next = 0
  return {
    pending,
    setTimeout: (callback: () => void, ms: number) => { pending.set(++next, { callback, ms }); return next },
    clearTimeout: (handle: unknown) => { pending.delete(handle as number) },
    /** The idle time passes: every pending timer fires. */
    elapse () {
      const due = [...pending.values()]
      pending.clear()
      for (const { callback } of due) callback()
    }
  }
}

test('an idle thread is ended after the idle time, and the next task starts a fresh one', { skip: process.platform !== 'linux' && 'threads counted in /proc' }, async (t) => {
  const threads = () => readdirSync('/proc/self/task').length
  const timers = fakeTimers()
  const before = threads()
  const pool = createHashingPool({ size: 1, idleMs: 5000, timers })
  t.teardown(() => pool.close())
  const first = await pool.run({ op: 'hash', password: 'a password', options: ARGON2ID_OPTIONS }) as string
  t.ok(threads() > before, 'a thread for the first task')
  t.same([...timers.pending.values()].map(({ ms }) => ms), [5000], 'its idle time runs once it has no task')
  const busy = pool.run({ op: 'verify', passwordHash: first, password: 'a password' })
  t.equal(timers.pending.size, 0, 'a task stops it')
  t.equal(await busy, true)
  t.equal(timers.pending.size, 1, 'and it runs again after')

  timers.elapse()
  for (const deadline = Date.now() + 10_000; threads() > before && Date.now() < deadline;) await setTimeout(20)
  t.equal(threads(), before, 'the idle thread has ended')

  t.equal(await pool.run({ op: 'verify', passwordHash: first, password: 'a password' }), true, 'a hash afterwards still works')
  t.ok(threads() > before, 'on a fresh thread')
})

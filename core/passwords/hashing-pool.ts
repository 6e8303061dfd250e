import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { busy } from '../errors.js'

export interface HashingPool {
  run (task: HashTask): Promise<string | boolean>
  close (): Promise<void>
}

export type HashTask =
  | { op: 'hash', password: string, options: object }
  | { op: 'verify', password: string, passwordHash: string }
  /** Imported hashes (core/passwords/hash-formats.ts), checked here too: off the event loop, at low priority, in the same bounded queue. */
  | { op: 'bcrypt', password: string, passwordHash: string }
  | { op: 'scrypt', password: string, salt: Uint8Array, hash: Uint8Array, N: number, r: number, p: number, maxmem: number }
  | { op: 'pbkdf2', password: string, salt: Uint8Array, hash: Uint8Array, iterations: number, digest: string }
  /** Measures Argon2id on this thread; answers the parameters (JSON of Argon2Parameters) that take about targetMs. */
  | { op: 'calibrate', targetMs: number, minimum: Argon2Parameters }

export interface Argon2Parameters {
  memoryCost: number
  timeCost: number
  parallelism: number
}

/** What a calibration answers: the parameters, and what one hash with them is expected to take here. */
export interface Calibration extends Argon2Parameters {
  expectedMs: number
}

/**
 * The body of each hashing thread: synchronous Argon2 on the thread itself,
 * which first drops its own CPU priority to the lowest (on Linux a thread's
 * nice value is its own), then, on Linux, asks for the SCHED_IDLE policy. On a
 * machine whose cores are all busy, the event loop then keeps serving token
 * checks and reads at full speed while logins take the CPU time left over;
 * with idle cores, hashing runs at full speed.
 * - On the libuv pool, hashing threads competed with the event loop as equals:
 *   reads' p99 rose 25-fold under login load.
 * - At nice 19 alone, a hashing thread the scheduler has picked keeps its core
 *   for its time slice (milliseconds) while the event loop waits: reads' p99
 *   doubled, 2 to 5 ms (issue 23). A SCHED_IDLE thread gives way as soon as
 *   the event loop wakes: 2 to 3 ms.
 * Node has no call for a thread's scheduling policy, so the thread runs
 * util-linux's `chrt` on its own thread id, once. Where chrt is missing (not
 * Linux, a bare image), nice 19 stays.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { setPriority, constants } = require('node:os')
const argon2 = require(workerData.argon2)
const { pbkdf2Sync, scryptSync, timingSafeEqual } = require('node:crypto')
// bcryptjs (pure JavaScript) is loaded at the first bcrypt hash only: most instances never see one.
let bcrypt
try { setPriority(constants.priority.PRIORITY_LOW) } catch {}
try {
  const threadId = require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()
  require('node:child_process').execFile('chrt', ['--idle', '--pid', '0', threadId], { stdio: 'ignore', timeout: 5000 }, () => {})
} catch {}
// Argon2's time grows linearly with its passes at a fixed memory cost: one hash at the minimum (after a
// warm-up, which pays for the first allocation) tells how many passes take about the target. The
// minimum's memory stays, and never fewer passes than the minimum has.
function calibrate ({ targetMs, minimum }) {
  const options = { algorithm: 2, ...minimum }
  const time = () => { const start = process.hrtime.bigint(); argon2.hashSync('calibration', options); return Number(process.hrtime.bigint() - start) / 1e6 }
  if (targetMs <= 0) return JSON.stringify({ ...minimum, expectedMs: 0 })
  time()
  const measured = Math.min(time(), time())
  const timeCost = Math.max(minimum.timeCost, Math.round(minimum.timeCost * targetMs / measured))
  return JSON.stringify({ ...minimum, timeCost, expectedMs: Math.round(measured * timeCost / minimum.timeCost) })
}
// The derived key against the stored one in constant time (both have the stored key's length).
function derivedMatches (derived, hash) {
  return timingSafeEqual(derived, Buffer.from(hash))
}
function run (task) {
  switch (task.op) {
    case 'hash': return argon2.hashSync(task.password, task.options)
    case 'calibrate': return calibrate(task)
    case 'verify': return argon2.verifySync(task.passwordHash, task.password)
    case 'bcrypt':
      bcrypt ??= require(workerData.bcryptjs)
      return bcrypt.compareSync(task.password, task.passwordHash)
    case 'scrypt':
      return derivedMatches(scryptSync(task.password, task.salt, task.hash.length, { N: task.N, r: task.r, p: task.p, maxmem: task.maxmem }), task.hash)
    case 'pbkdf2':
      return derivedMatches(pbkdf2Sync(task.password, task.salt, task.iterations, task.hash.length, task.digest), task.hash)
    default: throw new Error('unknown task')
  }
}
parentPort.on('message', ({ id, task }) => {
  try {
    const result = run(task)
    parentPort.postMessage({ id, result })
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) })
  }
})
`

/** A hashing thread's V8 heap: bcryptjs (imported hashes) is the most it runs. */
const HASHING_THREAD_HEAP = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 32 }

interface Queued {
  id: number
  task: HashTask
}

interface Pending {
  resolve: (result: string | boolean) => void
  reject: (error: Error) => void
}

export interface HashingPoolOptions {
  /** Threads: one per core by default. */
  size?: number
  /**
   * Tasks that may wait for a thread, beyond the one each thread holds ready (TASKS_PER_THREAD); past
   * it, run() refuses at once with 503 BUSY (PASSWORD_HASH_QUEUE_MAX). Unbounded, a flood of logins
   * would queue seconds of work and every login would time out instead of a few being told to retry.
   */
  maxQueued?: number
  /**
   * How long a thread may stand idle before it is ended (IDLE_THREAD_MS); the next task starts a fresh
   * one. Each thread holds its own V8 isolate, some megabytes of resident memory a thread.
   */
  idleMs?: number
  /** The timers that end idle threads: the global ones, or a test's fake clock. */
  timers?: IdleTimers
}

export interface IdleTimers {
  setTimeout (callback: () => void, ms: number): unknown
  clearTimeout (handle: unknown): void
}

/**
 * An idle hashing thread is ended after 5 s (issue 34, memory): a thread that has run keeps its V8
 * isolate, about 7 MB of the service's resident memory each (7.4 MB given back per thread ended; the
 * service 5 MB lower after the OAuth rows' flows, bench/rss-probe.ts), for logins that come in bursts.
 * Argon2's 19 MiB is not what stays: @node-rs/argon2's own allocator (mimalloc) gives it back. The
 * price: the first login after a quiet spell waits for a thread to start (its isolate, the addon's
 * load); a flood of logins keeps its threads.
 */
export const IDLE_THREAD_MS = 5000

/**
 * Tasks a thread holds at once: the one it runs and the next, posted ahead so that it starts the moment
 * the first ends. Handed over one at a time, the next task waited for the event loop to read the
 * answer and post it, a request's worth of work while logins keep it busy. Under a login flood 12% of
 * a core stood idle on the two cores; with the next task at hand the service took 6 points of it
 * (issue 23, CPU per thread from /proc).
 */
const TASKS_PER_THREAD = 2

/** One thread per core; tasks wait in a bounded queue for a thread with room. */
export function createHashingPool ({ size = availableParallelism(), maxQueued = Infinity, idleMs = IDLE_THREAD_MS, timers = globalThis as IdleTimers }: HashingPoolOptions = {}): HashingPool {
  const argon2 = createRequire(import.meta.url).resolve('@node-rs/argon2')
  const bcryptjs = createRequire(import.meta.url).resolve('bcryptjs')
  const queue: Queued[] = []
  const pending = new Map<number, Pending>()
  /** Each thread and the tasks posted to it, in the order it runs them. */
  const held = new Map<Worker, Queued[]>()
  let nextId = 0
  let closed = false
  /** Tasks taken and not yet answered, which close() waits for. */
  const accepted = new Set<Promise<string | boolean>>()
  /** The timer that ends each idle thread, set when it runs out of tasks and cleared when it takes one. */
  const idleTimers = new Map<Worker, unknown>()

  function endWhenIdle (worker: Worker) {
    const timer = timers.setTimeout(() => {
      idleTimers.delete(worker)
      held.delete(worker)
      worker.terminate().catch(() => {})
    }, idleMs)
    // The timer never keeps the process alive, as an idle thread does not.
    ;(timer as { unref?: () => void }).unref?.()
    idleTimers.set(worker, timer)
  }

  function keepBusy (worker: Worker) {
    if (!idleTimers.has(worker)) return
    timers.clearTimeout(idleTimers.get(worker))
    idleTimers.delete(worker)
  }

  function spawnWorker () {
    // Small heaps: a hashing thread runs little JavaScript (Argon2's memory is native), and V8's defaults
    // for a thread's heap are a main thread's, some tens of MB a thread once it has run (issue 23: RSS).
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { argon2, bcryptjs }, resourceLimits: HASHING_THREAD_HEAP })
    const tasks: Queued[] = []
    held.set(worker, tasks)
    worker.on('message', ({ id, result, error }: { id: number, result?: string | boolean, error?: string }) => {
      // A thread answers its tasks in the order it got them: this is the first it holds.
      const answered = tasks.findIndex((task) => task.id === id)
      if (answered !== -1) tasks.splice(answered, 1)
      const task = pending.get(id)
      pending.delete(id)
      if (error === undefined) task?.resolve(result as string | boolean)
      else task?.reject(new Error(error))
      dispatch(worker)
    })
    // A thread that dies fails the task it ran, never the process; the one posted ahead has not
    // started and goes back to the queue's head; a fresh thread takes their place (while closing too,
    // if tasks wait: close() lets the work it took finish).
    worker.on('error', (error) => {
      held.delete(worker)
      keepBusy(worker)
      const [running, ...ahead] = tasks
      if (running !== undefined) {
        pending.get(running.id)?.reject(error)
        pending.delete(running.id)
      }
      queue.unshift(...ahead)
      if (!closed || queue.length > 0) dispatch(spawnWorker())
    })
    return worker
  }

  function dispatch (worker: Worker) {
    const tasks = held.get(worker)
    if (tasks === undefined) return
    while (tasks.length < TASKS_PER_THREAD && queue.length > 0) {
      const next = queue.shift() as Queued
      tasks.push(next)
      worker.postMessage(next)
    }
    // An idle thread never keeps the process alive (an app whose start failed is never closed);
    // a busy one does, until its answers arrive.
    if (tasks.length === 0) {
      worker.unref()
      if (!closed && !idleTimers.has(worker)) endWhenIdle(worker)
    } else {
      worker.ref()
      keepBusy(worker)
    }
  }

  /** Where a new task goes: an idle thread, else a new one (up to `size`), else one with room ahead. */
  function threadFor (): Worker | undefined {
    let emptiest: Worker | undefined
    let fewest = TASKS_PER_THREAD
    for (const [worker, tasks] of held) {
      if (tasks.length === 0) return worker
      if (tasks.length < fewest) [emptiest, fewest] = [worker, tasks.length]
    }
    return held.size < size ? spawnWorker() : emptiest
  }

  return {
    run (task) {
      if (closed) return Promise.reject(new Error('hashing pool closed'))
      if (queue.length >= maxQueued) return Promise.reject(busy())
      const id = nextId++
      const result = new Promise<string | boolean>((resolve, reject) => {
        pending.set(id, { resolve, reject })
        queue.push({ id, task })
        // Threads start as tasks come and find none idle, up to `size`: an app that never hashes (a
        // test's, the CLI's) starts none, and a quiet one only what its logins needed.
        const worker = threadFor()
        if (worker !== undefined) dispatch(worker)
      })
      accepted.add(result)
      const forget = () => { accepted.delete(result) }
      result.then(forget, forget)
      return result
    },
    async close () {
      closed = true
      for (const worker of [...idleTimers.keys()]) keepBusy(worker)
      // Work already accepted finishes first: at shutdown, a login in flight still gets its answer.
      await Promise.allSettled([...accepted])
      await Promise.all([...held.keys()].map((worker) => worker.terminate()))
    }
  }
}

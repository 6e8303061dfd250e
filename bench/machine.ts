import { loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'

/*
 * A benchmark measures the machine as much as the code: another build or test run on the same cores
 * once took hello-world from 80,000 to 11,000 req/s. So a run starts only on a quiet machine (the
 * one-minute load average at most BENCH_MAX_LOAD, 0.5 by default), waits a while for one that is
 * settling (the run's own build, say), and says what the load was before and after.
 */

export const DEFAULT_MAX_LOAD = 0.5
/** The one-minute average decays by e every minute: from 2 to 0.5 takes about 1.4 minutes. */
export const SETTLE_WAIT_MS = 180_000
const SETTLE_POLL_MS = 5000

/** The one-minute load average. */
export function oneMinuteLoad (): number {
  return loadavg()[0]
}

/**
 * Waits until the one-minute load average is at most `maxLoad`, for at most `waitMs`.
 * Returns the load it settled at, or undefined when it never fell that low.
 */
export async function quietMachine (maxLoad: number, waitMs: number, log: (line: string) => void): Promise<number | undefined> {
  const deadline = Date.now() + waitMs
  for (let load = oneMinuteLoad(); ; load = oneMinuteLoad()) {
    if (load <= maxLoad) return load
    if (Date.now() >= deadline) return undefined
    log(`load average ${load.toFixed(2)} is above ${maxLoad}: waiting for the machine to settle`)
    await sleep(SETTLE_POLL_MS)
  }
}

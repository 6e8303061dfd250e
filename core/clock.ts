/**
 * Where the service reads the time. The app takes one (AppOptions.clock, the system clock by default),
 * and every rule that compares times asks it, so that a test moves time forward instead of sleeping
 * (test/fixtures/clock.ts). Timers (setTimeout, setInterval) still run on real time: only "what time is it" is injected.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now (): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** The clock's time as a Date. */
export function currentDate (clock: Clock): Date {
  return new Date(clock.now())
}

/** The clock's time in whole seconds since the epoch, as JWT claims count it. */
export function nowSeconds (clock: Clock): number {
  return Math.floor(clock.now() / 1000)
}

/** An account's failed logins so far and when the last one happened (epoch ms). */
export interface FailureState {
  count: number
  lastFailureAt: number
}

/** One counted attempt: the state it made (`count` failures, the last at `at`) and the state before it (null: none). */
export interface ReservedAttempt {
  count: number
  at: number
  previous: FailureState | null
}

/** When a failure state locks the account: after `threshold` failures, for firstMs doubling per further failure, up to maxMs. */
export interface LockoutPolicy {
  threshold: number
  firstMs: number
  maxMs: number
}

/** The end of the lockout a failure state is in (epoch ms), or 0 when it is not locked. */
export function lockedUntil ({ count, lastFailureAt }: FailureState, policy: LockoutPolicy): number {
  if (count < policy.threshold) return 0
  const doublings = Math.min(count - policy.threshold, 30)
  return lastFailureAt + Math.min(policy.firstMs * 2 ** doublings, policy.maxMs)
}

/** What reserve gives: the new count and the state before it, or the end of the lockout that refused it. */
export type ReserveResult = { reserved: true, count: number, previous: FailureState | null } | { reserved: false, lockedUntil: number }

/**
 * Where the failure counts live: in memory (one process) without REDIS_URL,
 * in Redis with it, shared by every instance. `reserve` is atomic: the check
 * of the lockout and the increment cannot interleave with another's.
 */
export interface FailureStore {
  get (key: string): Promise<FailureState | undefined>
  /** Unless the key is locked at `now`, adds one failure at `now` and keeps the key for `ttlMs`. */
  reserve (key: string, now: number, ttlMs: number, policy: LockoutPolicy): Promise<ReserveResult>
  /**
   * Takes a reservation back, atomically: when the key is still as that reservation left it, it becomes
   * exactly what it was before (count, time of the last failure, expiry); when another attempt changed it
   * since, only one failure is taken off (never below zero), and the later attempt's time stays.
   */
  release (key: string, attempt: ReservedAttempt): Promise<void>
  delete (key: string): Promise<void>
}

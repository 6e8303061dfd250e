/** `last_used_at` is written at most this often per session (issue 14: a write on every refresh cost more than the refresh). */
export const TOUCH_INTERVAL_MS = 60_000

/**
 * Remembers when this process last wrote a session's last_used_at. Entries older than the interval
 * are dropped as new ones come, so memory holds only the sessions refreshed within the last minute.
 * Per process: with N instances a session's row is written at most N times a minute.
 */
export class TouchThrottle {
  private current = new Map<string, number>()
  private previous = new Map<string, number>()
  private generationStartedAt = -Infinity

  /** True when the session's last_used_at is due a write at `now` (and records that it is being written). */
  due (sessionId: string, now: number): boolean {
    // Two generations of a minute each: everything in `previous` is older than one interval once it is swapped out.
    if (now - this.generationStartedAt >= TOUCH_INTERVAL_MS) {
      this.previous = this.current
      this.current = new Map()
      this.generationStartedAt = now
    }
    const last = this.current.get(sessionId) ?? this.previous.get(sessionId)
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return false
    this.current.set(sessionId, now)
    return true
  }
}

import { systemClock, type Clock } from '../clock.js'
import { lockedUntil, type FailureState, type FailureStore } from './failure-store.js'

// Bounds memory under a flood of distinct emails (see memoryFailureStore for which key goes first).
export const MAX_TRACKED_KEYS = 100_000

interface Tracked extends FailureState {
  expiresAt: number
  /** The lockout threshold the key was counted under: its tier is its count, up to this. */
  threshold: number
}

/**
 * The in-memory FailureStore: a Map with expiry, bounded to `maxKeys` keys. When full, an expired key
 * goes first; else the stalest key among those with the fewest failures. Keys are kept in tiers by
 * their count (up to the lockout threshold), so a flood of new keys, one failure each, only pushes out
 * keys like themselves: an account being guessed at, or locked, stays counted however many other
 * emails are tried (evicting one would cost a guesser `maxKeys` keys with as many failures as it has).
 * `clock` tells get() which keys have expired; reserve() is given its time by the caller.
 */
export function memoryFailureStore (maxKeys = MAX_TRACKED_KEYS, clock: Clock = systemClock): FailureStore {
  const states = new Map<string, Tracked>()
  // Each tier in order of last change (re-inserted on each failure): its first key is its stalest.
  const tiers = new Map<number, Map<string, Tracked>>()
  const tierOf = (state: Tracked) => Math.min(state.count, state.threshold)
  const track = (key: string, state: Tracked) => {
    states.set(key, state)
    const tier = tierOf(state)
    let members = tiers.get(tier)
    if (members === undefined) {
      members = new Map()
      tiers.set(tier, members)
    }
    members.set(key, state)
  }
  const untrack = (key: string) => {
    const state = states.get(key)
    if (state === undefined) return
    states.delete(key)
    const tier = tierOf(state)
    const members = tiers.get(tier)
    members?.delete(key)
    if (members?.size === 0) tiers.delete(tier)
  }
  const evictOne = (now: number) => {
    const stalest = [...tiers.keys()].sort((a, b) => a - b).map(tier => (tiers.get(tier) as Map<string, Tracked>).entries().next().value as [string, Tracked])
    const expired = stalest.find(([, state]) => state.expiresAt <= now)
    untrack((expired ?? stalest[0])[0])
  }
  const live = (key: string, now: number) => {
    const state = states.get(key)
    if (state !== undefined && state.expiresAt <= now) {
      untrack(key)
      return undefined
    }
    return state
  }
  return {
    async get (key) {
      const state = live(key, clock.now())
      return state === undefined ? undefined : { count: state.count, lastFailureAt: state.lastFailureAt }
    },
    async reserve (key, now, ttlMs, policy) {
      // Synchronous from the check to the increment: nothing else runs in between.
      const state = live(key, now)
      if (state !== undefined) {
        const until = lockedUntil(state, policy)
        if (until > now) return { reserved: false, lockedUntil: until }
      }
      const previous = state === undefined ? null : { count: state.count, lastFailureAt: state.lastFailureAt }
      const next: Tracked = { count: (previous?.count ?? 0) + 1, lastFailureAt: now, expiresAt: now + ttlMs, threshold: policy.threshold }
      // Re-inserting keeps each tier in order of last failure, so eviction drops its stalest key.
      untrack(key)
      if (states.size >= maxKeys) evictOne(now)
      track(key, next)
      return { reserved: true, count: next.count, previous }
    },
    async release (key, { count, at, previous }) {
      const state = states.get(key)
      if (state === undefined) return
      untrack(key)
      if (state.count === count && state.lastFailureAt === at) {
        // As the reservation left it: back to the state before, expiry included (each failure sets it ttl after itself).
        if (previous === null) return
        const ttlMs = state.expiresAt - state.lastFailureAt
        track(key, { ...state, count: previous.count, lastFailureAt: previous.lastFailureAt, expiresAt: previous.lastFailureAt + ttlMs })
        return
      }
      track(key, { ...state, count: Math.max(0, state.count - 1) })
    },
    async delete (key) {
      untrack(key)
    }
  }
}

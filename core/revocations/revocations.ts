import type { AccountStore, RevocationRecord, SessionState } from '../../db/store.js'
import type { Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import { runPeriodically } from '../periodic.js'
import { followingStore } from './following-store.js'
import { RevocationSet } from './revocation-set.js'

export interface Revocations {
  /**
   * As the store's sessionState, from memory: 'revoked' for a session in the set, 'unknown' for one
   * that ended with its user, else 'live'. While the last sync is older than FRESHNESS_MS it asks
   * the store (the path before issue 14), so a revocation made elsewhere is never missed for longer.
   */
  sessionState (sessionId: string, now: Date): Promise<SessionState>
  /**
   * The store's own sessionState, never the set's: what outlives the set's memory of a revocation
   * (ACCESS_TOKEN_TTL and 5 s) asks this (an app's grant, the provider's browser session).
   */
  storedSessionState (sessionId: string, now: Date): Promise<SessionState>
  /** sessionState where memory alone answers it (the session is in the set, or the log is followed); else undefined. */
  knownSessionState (sessionId: string): SessionState | undefined
  /** Reads the log up to now; resolves once every revocation committed before the call is in the set. */
  catchUp (): Promise<void>
  /** Whether the last successful sync is at most FRESHNESS_MS old. */
  isFresh (): boolean
  /**
   * Tells `listener` the user id of every user-change row read from the log (core/users/user-cache.ts),
   * and `undefined` after a sync that ends a time of not following the log (longer than FRESHNESS_MS):
   * rows of that time may be gone (pruned), so anything kept of any user may be out of date.
   */
  onUserChange (listener: (userId: number | undefined) => void): void
  /**
   * Tells `listener` every session-revocation row read from the log after the call (a row may come again
   * when a gap in the log is read twice): core/oauth/backchannel-logout.ts tells apps of their grants' end.
   */
  onSessionRevoked (listener: (row: RevocationRecord) => void): void
  readonly set: RevocationSet
}

export interface RevocationsDependencies {
  /** The store as opened: the revocations follow its log and wrap it (core/revocations/following-store.ts). */
  store: AccountStore
  clock: Clock
  log: Logger
}

/** What createRevocations makes: the set, the store that keeps it exact, and the stop of its timers. */
export interface FollowedRevocations {
  revocations: Revocations
  /** The store every plugin and route is to use: its revocations land in the set before they return. */
  store: AccountStore
  /** Stops following and pruning the log; resolves when the read under way has ended. */
  close (): Promise<void>
}

export interface RevocationsOptions {
  accessTokenTtlSeconds: number
}

/** How often the log is read: a revocation made elsewhere shows here within this (and always within FRESHNESS_MS). */
export const POLL_INTERVAL_MS = 200
/** The promise of the issue: an instance whose last sync is older than this checks the store per request. */
export const FRESHNESS_MS = 1000
/** Rows read per query (a restart after a busy hour reads the log in pages). */
const PAGE_SIZE = 10_000
/** Revocations are kept this much longer than ACCESS_TOKEN_TTL: the 1 s of verification leeway, and clock skew between instances. */
const RETENTION_MARGIN_MS = 5000

/**
 * Revocation state in memory (issue 14). The store writes a revocation-log row in the same
 * transaction as each revocation (and the database one for each change of a user's shown fields,
 * which the user cache follows: issue 23); this follows the log by polling its primary key
 * (`seq > cursor`: on SQLite a few microseconds, on PostgreSQL one indexed statement on a pooled
 * connection; cheap enough that LISTEN/NOTIFY is not worth a dedicated connection per instance)
 * and keeps the sessions revoked within the last ACCESS_TOKEN_TTL, so the access-token guard reads
 * nothing from the store. Revocations by this process are exact: the store it returns (which every
 * plugin gets) reads the log right after each revoking write, before the request that revoked answers.
 * It reads the whole window of the log before it resolves, so before the server is ready.
 */
export async function createRevocations ({ store, clock, log }: RevocationsDependencies, options: RevocationsOptions): Promise<FollowedRevocations> {
  const retentionMs = options.accessTokenTtlSeconds * 1000 + RETENTION_MARGIN_MS
  const set = new RevocationSet(retentionMs)
  let lastSyncAt = -Infinity
  const userChangeListeners: Array<(userId: number | undefined) => void> = []
  const userChanged = (userId: number | undefined) => { for (const listener of userChangeListeners) listener(userId) }
  const sessionRevokedListeners: Array<(row: RevocationRecord) => void> = []

  async function sync (trustGaps = false): Promise<void> {
    const startedAt = clock.now()
    const resuming = startedAt - lastSyncAt > FRESHNESS_MS
    const since = new Date(startedAt - retentionMs)
    let after = set.cursor
    for (;;) {
      const rows = await store.readRevocations(after, since, PAGE_SIZE)
      set.apply(rows, startedAt, { trustGaps })
      for (const row of rows) {
        if (row.sessionId === null) userChanged(row.userId)
        else for (const listener of sessionRevokedListeners) listener(row)
      }
      if (rows.length < PAGE_SIZE) break
      after = rows[rows.length - 1].seq
    }
    set.expire(startedAt)
    lastSyncAt = startedAt
    if (resuming) userChanged(undefined)
  }

  let running: Promise<void> | undefined
  let queued: Promise<void> | undefined
  function catchUp (): Promise<void> {
    if (running === undefined) {
      running = sync().finally(() => { running = undefined })
      return running
    }
    // A sync under way may have read before the caller's write committed: run one more after it.
    queued ??= running.catch(() => {}).then(() => {
      queued = undefined
      return catchUp()
    })
    return queued
  }

  const isFresh = () => clock.now() - lastSyncAt <= FRESHNESS_MS

  function knownSessionState (sessionId: string): SessionState | undefined {
    const revoked = set.get(sessionId)
    if (revoked !== undefined) return revoked.userDeleted ? 'unknown' : 'revoked'
    return isFresh() ? 'live' : undefined
  }

  const revocations: Revocations = {
    async sessionState (sessionId, now) {
      return knownSessionState(sessionId) ?? await store.sessionState(sessionId, now)
    },
    storedSessionState: async (sessionId, now) => await store.sessionState(sessionId, now),
    knownSessionState,
    catchUp,
    isFresh,
    onUserChange (listener) { userChangeListeners.push(listener) },
    onSessionRevoked (listener) { sessionRevokedListeners.push(listener) },
    set
  }

  /** After a revoking write: into the set now, or, if the log cannot be read, the store is asked per request until it can. */
  async function afterRevocation (): Promise<void> {
    try {
      await catchUp()
    } catch (error) {
      lastSyncAt = -Infinity
      log.warn({ err: error }, 'revocation log not read after a revocation; checking the store per request')
    }
  }

  await sync(true)

  let lastFailureLogged = 0
  const poller = runPeriodically(POLL_INTERVAL_MS, catchUp, {
    onError (error) {
      // Once a minute at most: a store down for long would otherwise fill the log five times a second.
      if (clock.now() - lastFailureLogged < 60_000) return
      lastFailureLogged = clock.now()
      log.warn({ err: error }, 'revocation log not read; checking the store per request until it is')
    }
  })
  // Log rows older than the window are moot; one instance deleting them is enough, but all may.
  // A failed prune is left for the next minute (the poll's warning already tells of a store down).
  const pruner = runPeriodically(60_000, async () => {
    await store.pruneRevocations(new Date(clock.now() - retentionMs))
  }, { onError () {} })

  return {
    revocations,
    store: followingStore(store, { afterRevocation, sessionState: revocations.sessionState }),
    async close () {
      await Promise.all([poller.stop(), pruner.stop()])
      await running?.catch(() => {})
      await queued?.catch(() => {})
    }
  }
}

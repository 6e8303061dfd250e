import { LRUCache } from 'lru-cache'
import type { UsersStore } from '../../db/store.js'
import type { Revocations } from '../revocations/revocations.js'
import type { Clock } from '../clock.js'
import type { ShownUser } from '../schemas/users.js'

/** A user as kept: what GET /users/:id shows, and what userinfo adds (email_verified). */
export interface KeptUser {
  shown: ShownUser
  emailVerified: boolean
}

/**
 * How long a kept user's unverified email is taken as still unverified. A verification writes no
 * user-change row (only names, email, username and deletion do: migration 0014), so a kept `false` is
 * read again after this; a kept `true` stands until the address changes, which drops the user (a new
 * address is unverified until proved, in the same update).
 */
export const UNVERIFIED_EMAIL_RECHECK_MS = 5000

/** The user cache's first size (its slots are set out up front); it grows to USER_CACHE_MAX as users are kept. */
export const FIRST_SLOTS = 1024

export interface UserCache {
  /** The user as GET /users/:id shows it, from memory; undefined when not kept, or when the log is not followed now. */
  peek (userId: number): ShownUser | undefined
  /** The user from memory (peek), else read from the store and kept. */
  find (userId: number): Promise<ShownUser | undefined>
  /**
   * The user with whether its email is verified (OpenID userinfo's email_verified): from memory, where an
   * unverified email kept for longer than UNVERIFIED_EMAIL_RECHECK_MS is read again from the store.
   */
  findWithEmailVerified (userId: number): Promise<KeptUser | undefined>
  /** findWithEmailVerified where memory alone answers it; else undefined. */
  peekWithEmailVerified (userId: number): KeptUser | undefined
  /** How many users are kept. */
  readonly size: number
}

export interface UserCacheDependencies {
  store: Pick<UsersStore, 'findUserById'>
  /** The log follower: its user-change rows drop kept users, its freshness guards every read. */
  revocations: Pick<Revocations, 'isFresh' | 'onUserChange'>
  /** The app's clock (the recheck of an unverified email); Date.now without one. */
  clock?: Clock
}

export interface UserCacheOptions {
  /** USER_CACHE_MAX: how many users are kept (least recently read go first); 0 keeps none. */
  max: number
}

/**
 * The users authenticated GETs read, kept in this process (issue 23): GET /users/:id reads no store.
 * A change of what it shows (names, email, username) or a deletion is a user-change row of the
 * revocation log, written by the database itself (triggers, migration 0014); every instance follows
 * the log and drops its copy, under the same freshness guard as revocations: while the log has not
 * been read for FRESHNESS_MS, nothing is read from or put into the cache (the store answers), and
 * the first read after such a time empties it. A read from the store that a change overtook (the
 * change's row applied while the read was in flight) is answered but not kept.
 */
export function createUserCache ({ store, revocations, clock = { now: Date.now } }: UserCacheDependencies, { max }: UserCacheOptions): UserCache {
  // Made at the first user kept, not at start: lru-cache sets out its slots for `max` entries up front
  // (a hundred thousand by default), some milliseconds of the start (issue 23), and 2.7 MB resident whether
  // ten users are kept or all of them (issue 34's memory goal). So it starts at FIRST_SLOTS and is made four
  // times larger, up to `max`, each time it is full (keep).
  let kept: LRUCache<number, KeptUser & { readAt: number }> | undefined
  /** Grows with every drop: a read begun before a drop does not put what it read in the cache. */
  let drops = 0
  revocations.onUserChange((userId) => {
    drops += 1
    if (userId === undefined) kept?.clear()
    else kept?.delete(userId)
  })

  function keptUser (userId: number): (KeptUser & { readAt: number }) | undefined {
    return kept !== undefined && revocations.isFresh() ? kept.get(userId) : undefined
  }

  function peek (userId: number): ShownUser | undefined {
    return keptUser(userId)?.shown
  }

  function peekWithEmailVerified (userId: number): KeptUser | undefined {
    const known = keptUser(userId)
    return known !== undefined && (known.emailVerified || clock.now() - known.readAt < UNVERIFIED_EMAIL_RECHECK_MS) ? known : undefined
  }

  async function read (userId: number): Promise<KeptUser | undefined> {
    const dropsBefore = drops
    const readAt = clock.now()
    const user = await store.findUserById(userId)
    if (user === undefined) return undefined
    const shown: ShownUser = { id: user.id, firstName: user.firstName, lastName: user.lastName, email: user.email, username: user.username }
    const read = { shown, emailVerified: user.emailVerified, readAt }
    if (max > 0 && drops === dropsBefore && revocations.isFresh()) keep(userId, read)
    return read
  }

  function keep (userId: number, read: KeptUser & { readAt: number }): void {
    if (kept === undefined) kept = new LRUCache({ max: Math.min(max, FIRST_SLOTS) })
    else if (kept.size >= kept.max && kept.max < max && !kept.has(userId)) {
      // Full below `max`: a larger cache, the kept users moved in from the least recently read, so their order stands.
      const larger = new LRUCache<number, KeptUser & { readAt: number }>({ max: Math.min(max, kept.max * 4) })
      for (const id of kept.rkeys()) {
        const user = kept.peek(id)
        if (user !== undefined) larger.set(id, user)
      }
      kept = larger
    }
    kept.set(userId, read)
  }

  return {
    peek,
    async find (userId) {
      return peek(userId) ?? (await read(userId))?.shown
    },
    async findWithEmailVerified (userId) {
      return peekWithEmailVerified(userId) ?? await read(userId)
    },
    peekWithEmailVerified,
    get size () {
      return kept?.size ?? 0
    }
  }
}

import { LRUCache } from 'lru-cache'
import type { UsersStore } from '../../db/store.js'
import type { Revocations } from '../revocations/revocations.js'
import type { ShownUser } from '../schemas/users.js'

export interface UserCache {
  /** The user as GET /users/:id shows it, from memory; undefined when not kept, or when the log is not followed now. */
  peek (userId: number): ShownUser | undefined
  /** The user from memory (peek), else read from the store and kept. */
  find (userId: number): Promise<ShownUser | undefined>
  /** How many users are kept. */
  readonly size: number
}

export interface UserCacheDependencies {
  store: Pick<UsersStore, 'findUserById'>
  /** The log follower: its user-change rows drop kept users, its freshness guards every read. */
  revocations: Pick<Revocations, 'isFresh' | 'onUserChange'>
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
export function createUserCache ({ store, revocations }: UserCacheDependencies, { max }: UserCacheOptions): UserCache {
  // Made at the first user kept, not at start: lru-cache sets out its slots for `max` entries up front
  // (a hundred thousand by default), some milliseconds of the start (issue 23).
  let kept: LRUCache<number, ShownUser> | undefined
  /** Grows with every drop: a read begun before a drop does not put what it read in the cache. */
  let drops = 0
  revocations.onUserChange((userId) => {
    drops += 1
    if (userId === undefined) kept?.clear()
    else kept?.delete(userId)
  })

  function peek (userId: number): ShownUser | undefined {
    return kept !== undefined && revocations.isFresh() ? kept.get(userId) : undefined
  }

  return {
    peek,
    async find (userId) {
      const known = peek(userId)
      if (known !== undefined) return known
      const dropsBefore = drops
      const user = await store.findUserById(userId)
      if (user === undefined) return undefined
      const shown: ShownUser = { id: user.id, firstName: user.firstName, lastName: user.lastName, email: user.email, username: user.username }
      if (max > 0 && drops === dropsBefore && revocations.isFresh()) (kept ??= new LRUCache({ max })).set(userId, shown)
      return shown
    },
    get size () {
      return kept?.size ?? 0
    }
  }
}

import type { AccountStore, SessionState } from '../../db/store.js'

/** What the following store asks of the revocations (core/revocations/revocations.ts). */
export interface RevocationFollower {
  /** After a revoking write: the revocation is read into the set before the write's caller goes on. Never throws. */
  afterRevocation (): Promise<void>
  /** The store's sessionState, answered from the set. */
  sessionState (sessionId: string, now: Date): Promise<SessionState>
}

/**
 * The store as every plugin and route sees it (plugins/app/store.ts decorates it): the methods that
 * revoke update this process's revocation set before they return, so that every revocation path
 * (logout, logout-all, password change or reset, session delete, refresh reuse, email change,
 * account deletion, an address proved, an account disabled, and any added later) is exact here; sessionState answers from
 * the set, so the access-token guard reads nothing from the store. The methods that change what
 * GET /users/:id shows (a profile update, an email change, a deletion) read the log too before they
 * return, so this process's user cache drops its copy of the user at once (other processes within
 * the poll's 200 ms).
 */
export function followingStore (store: AccountStore, follower: RevocationFollower): AccountStore {
  const { afterRevocation } = follower
  return storeWith(store, {
    async revokeFamily (familyId, now) {
      await store.revokeFamily(familyId, now)
      await afterRevocation()
    },
    async revokeStatusIndex (sessionId, statusIndex, now) {
      await store.revokeStatusIndex(sessionId, statusIndex, now)
      await afterRevocation()
    },
    async revokeUserSessions (userId, now, revokeOptions) {
      const revoked = await store.revokeUserSessions(userId, now, revokeOptions)
      await afterRevocation()
      return revoked
    },
    async changePassword (userId, passwordHash, now, keepSessionId) {
      const ended = await store.changePassword(userId, passwordHash, now, keepSessionId)
      if (ended > 0) await afterRevocation()
      return ended
    },
    async changeEmail (userId, changes, now, notice) {
      const changed = await store.changeEmail(userId, changes, now, notice)
      // Its sessions end, and the user's shown email changed (a user-change row): both read now.
      if (changed.user !== undefined || changed.sessionsEnded > 0) await afterRevocation()
      return changed
    },
    async updateUser (id, changes, webhook) {
      const updated = await store.updateUser(id, changes, webhook)
      // The database logged the change of the user's shown fields: this instance drops its copy before answering.
      if (updated !== undefined) await afterRevocation()
      return updated
    },
    async disableUser (userId, now) {
      const ended = await store.disableUser(userId, now)
      if (ended !== undefined && ended > 0) await afterRevocation()
      return ended
    },
    async deleteUser (id, webhook) {
      const deleted = await store.deleteUser(id, webhook)
      await afterRevocation()
      return deleted
    },
    async proveAddress (proof, now) {
      const outcome = await store.proveAddress(proof, now)
      if (outcome.outcome !== 'identity_conflict' && outcome.sessionsEnded > 0) await afterRevocation()
      return outcome
    },
    sessionState: follower.sessionState
  })
}

/**
 * The store with some methods replaced: each other method passes through to `store` (looked up at
 * each call), except `overrides`.
 */
export function storeWith (store: AccountStore, overrides: Partial<AccountStore>): AccountStore {
  const methods: Record<string, unknown> = {}
  const target = store as unknown as Record<string, (...args: unknown[]) => unknown>
  for (let layer: object | null = store; layer !== null && layer !== Object.prototype; layer = Object.getPrototypeOf(layer)) {
    for (const name of Object.getOwnPropertyNames(layer)) {
      if (name === 'constructor' || name in methods || typeof target[name] !== 'function') continue
      methods[name] = (...args: unknown[]) => target[name](...args)
    }
  }
  return Object.assign(methods, overrides) as unknown as AccountStore
}

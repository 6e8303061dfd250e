import type { AccountStore } from '../../db/store.js'

/**
 * The store as every plugin and route sees it: each method passes through to `store` (looked up
 * at each call), except `overrides`. The revocations plugin overrides the methods that revoke, so
 * that every revocation path (logout, logout-all, password change or reset, session delete, refresh
 * reuse, email change, account deletion, an address proved, and any added later) updates this process's revocation set
 * before it returns.
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

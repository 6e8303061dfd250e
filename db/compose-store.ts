import type {
  AccountRulesStore, AccountStore, EmailCodesStore, IdentitiesStore, OAuthStore, OneTimeTokensStore, OrganisationsStore, OutboxStore, PasskeysStore, SecondFactorsStore,
  SecurityEventsStore, SessionsStore, SettingsStore, SigningKeysStore, UsersStore, WebhookOutboxStore
} from './store.js'

/**
 * One backend's queries, aggregate by aggregate (db/store/), each built on that backend's connection. The
 * tuple's order is the type's: a backend that leaves one out does not compile.
 */
export type AggregateQueries<C> = [
  (c: C) => UsersStore, (c: C) => AccountRulesStore, (c: C) => SessionsStore, (c: C) => OneTimeTokensStore,
  (c: C) => SecurityEventsStore, (c: C) => OutboxStore, (c: C) => SigningKeysStore, (c: C) => PasskeysStore,
  (c: C) => SecondFactorsStore, (c: C) => IdentitiesStore, (c: C) => SettingsStore, (c: C) => OAuthStore,
  (c: C) => WebhookOutboxStore, (c: C) => EmailCodesStore, (c: C) => OrganisationsStore
]

type Methods = Record<string, (...args: unknown[]) => unknown>
const IMPLEMENTATION = Symbol('the store\'s own queries')

/**
 * Every store shares one prototype whose methods call the store's own queries: what a class gave before
 * the split. A test or a tool that wraps a method of the prototype sees the calls of every store, the
 * service's included (test/security/revocation.test.ts counts the queries a request makes that way).
 */
const storePrototype: Methods = {}

function shareMethods (implementation: Methods): void {
  for (const name of Object.keys(implementation)) {
    if (name in storePrototype) continue
    storePrototype[name] = function (this: { [IMPLEMENTATION]: Methods }, ...args: unknown[]) {
      return this[IMPLEMENTATION][name](...args)
    }
  }
}

/** A backend's store: the queries of every aggregate on one connection, with the connection's ping and close. */
export function composeStore<C extends { ping (): Promise<void>, close (): Promise<void> }> (c: C, queries: AggregateQueries<C>): AccountStore {
  const parts: object[] = queries.map(build => build(c))
  const lifecycle = { ping: async () => { await c.ping() }, close: async () => { await c.close() } }
  const implementation = Object.assign({}, ...parts, lifecycle) as Methods
  shareMethods(implementation)
  return Object.assign(Object.create(storePrototype) as object, { [IMPLEMENTATION]: implementation }) as unknown as AccountStore
}

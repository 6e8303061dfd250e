import type {
  AccountRulesStore, AccountStore, IdentitiesStore, OneTimeTokensStore, OutboxStore, PasskeysStore, SecondFactorsStore,
  SecurityEventsStore, SessionsStore, SettingsStore, SigningKeysStore, UsersStore
} from './store.js'

/**
 * One backend's queries, aggregate by aggregate (db/store/), each built on that backend's connection. The
 * tuple's order is the type's: a backend that leaves one out does not compile.
 */
export type AggregateQueries<C> = [
  (c: C) => UsersStore, (c: C) => AccountRulesStore, (c: C) => SessionsStore, (c: C) => OneTimeTokensStore,
  (c: C) => SecurityEventsStore, (c: C) => OutboxStore, (c: C) => SigningKeysStore, (c: C) => PasskeysStore,
  (c: C) => SecondFactorsStore, (c: C) => IdentitiesStore, (c: C) => SettingsStore
]

/** A backend's store: the queries of every aggregate on one connection, with the connection's ping and close. */
export function composeStore<C extends { ping (): Promise<void>, close (): Promise<void> }> (c: C, queries: AggregateQueries<C>): AccountStore {
  const parts: object[] = queries.map(build => build(c))
  const lifecycle = { ping: async () => { await c.ping() }, close: async () => { await c.close() } }
  return Object.assign({}, ...parts, lifecycle) as AccountStore
}

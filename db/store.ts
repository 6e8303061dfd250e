/*
 * The account store: all the rules know of persistence. One interface per aggregate (db/store/:
 * users, sessions and refresh tokens, one-time tokens, mailed sign-in codes, organisations, second factors, passkeys, identities, the
 * mail and webhook outboxes, signing keys, settings, security events, the OAuth provider's models, and the account rules
 * that write across them in one transaction); AccountStore is all of them. Each backend (db/sqlite,
 * db/postgres) implements it in its own folder; every method is async so that a networked backend
 * fits. The contract tests in test/db/ hold both backends to it.
 */

import type { AccountRulesStore } from './store/accounts.js'
import type { EmailCodesStore } from './store/email-codes.js'
import type { SecurityEventsStore } from './store/events.js'
import type { IdentitiesStore } from './store/identities.js'
import type { SigningKeysStore } from './store/keys.js'
import type { OAuthStore } from './store/oauth.js'
import type { OrganisationsStore } from './store/organisations.js'
import type { OneTimeTokensStore } from './store/one-time-tokens.js'
import type { OutboxStore } from './store/outbox.js'
import type { PasskeysStore } from './store/passkeys.js'
import type { SecondFactorsStore } from './store/second-factors.js'
import type { SessionsStore } from './store/sessions.js'
import type { SettingsStore } from './store/settings.js'
import type { UsersStore } from './store/users.js'
import type { WebhookOutboxStore } from './store/webhooks.js'

export * from './store/accounts.js'
export * from './store/email-codes.js'
export * from './store/errors.js'
export * from './store/events.js'
export * from './store/identities.js'
export * from './store/keys.js'
export * from './store/oauth.js'
export * from './store/one-time-tokens.js'
export * from './store/organisations.js'
export * from './store/outbox.js'
export * from './store/passkeys.js'
export * from './store/second-factors.js'
export * from './store/sessions.js'
export * from './store/settings.js'
export * from './store/users.js'
export * from './store/webhooks.js'

/** The whole store, as plugins/app/store.ts decorates it. */
export interface AccountStore extends
  AccountRulesStore,
  EmailCodesStore,
  SecurityEventsStore,
  IdentitiesStore,
  SigningKeysStore,
  OAuthStore,
  OneTimeTokensStore,
  OrganisationsStore,
  OutboxStore,
  PasskeysStore,
  SecondFactorsStore,
  SessionsStore,
  SettingsStore,
  UsersStore,
  WebhookOutboxStore {
  /** Resolves when the store answers and its schema has every migration applied; throws StoreUnavailableError otherwise (GET /ready). */
  ping (): Promise<void>
  close (): Promise<void>
}

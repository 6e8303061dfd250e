import type { NewUser, UserRecord } from './users.js'
import type { WebhookOf } from './webhooks.js'

/** An account at an OpenID Connect provider linked to a user: the provider's `sub` is the identity. */
export interface IdentityRecord {
  /** The provider's name in OIDC_PROVIDERS. */
  provider: string
  subject: string
  userId: number
  /** The email the provider gave at linking (not kept in step with it). */
  email: string | null
  createdAt: Date
}

export type NewIdentity = Omit<IdentityRecord, 'createdAt'>

/** What unlinking an identity did: nothing to unlink, or refused because it is the last way to sign in. */
export type UnlinkOutcome = 'unlinked' | 'not_found' | 'last_login_method'

/** The identities at OpenID providers that sign a user in. */
export interface IdentitiesStore {
  findIdentity (provider: string, subject: string): Promise<IdentityRecord | undefined>
  /** The user's identities, oldest first. */
  listIdentities (userId: number): Promise<IdentityRecord[]>
  /**
   * A new user and its identity in one transaction, with `webhook`'s event (user.created). The user's address
   * is verified when `user.emailVerified` says so (the provider proved it). Throws DuplicateValueError (email,
   * username), or IdentityTakenError when another request linked the same (provider, subject) first.
   */
  createUserWithIdentity (user: NewUser & { emailVerified?: boolean }, identity: Omit<NewIdentity, 'userId'>, now: Date, webhook?: WebhookOf<UserRecord>): Promise<UserRecord>
  /** Links an identity; false, writing nothing, when (provider, subject) is linked already or the user has one at that provider. */
  linkIdentity (identity: NewIdentity, now: Date): Promise<boolean>
  /**
   * Removes the user's identity at the provider unless it is the last way to sign in (no password and
   * no other identity), judged in the same transaction so two unlinks racing cannot both pass.
   * (Passkeys, once stored, count here too.)
   */
  unlinkIdentity (userId: number, provider: string): Promise<UnlinkOutcome>
}

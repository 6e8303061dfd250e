/**
 * What the OAuth 2.1 / OpenID provider (oidc-provider, core/oauth/) keeps: its models as its adapter
 * hands them over (clients, grants, authorization and device codes, refresh tokens, the provider's
 * browser sessions, interactions, registration access tokens), one row each, by kind and id. The
 * payload is oidc-provider's own JSON; the columns beside it are what the lookups need.
 */

/** One stored model: oidc-provider's payload, and when it expires (null: never, a client) or was consumed. */
export interface OAuthModelRecord {
  id: string
  payload: Record<string, unknown>
  expiresAt: Date | null
  consumedAt: Date | null
}

/** One claim of claimOAuthModels: the model's id, payload and expiry. */
export interface OAuthModelClaim {
  id: string
  payload: Record<string, unknown>
  expiresAt: Date
}

export interface OAuthStore {
  /**
   * Inserts the model `kind`/`id` or replaces its payload and expiry (keeping consumedAt). The
   * payload's `grantId`, `userCode`, `uid` and `accountId` (strings, where present) are stored
   * beside it for the lookups below.
   */
  upsertOAuthModel (kind: string, id: string, payload: Record<string, unknown>, expiresAt: Date | null): Promise<void>
  /** The model, unless it has expired at `now` (a consumed one is still found: oidc-provider refuses it itself). */
  findOAuthModel (kind: string, id: string, now: Date): Promise<OAuthModelRecord | undefined>
  /** The device code whose user code this is (RFC 8628), unless expired. */
  findOAuthModelByUserCode (kind: string, userCode: string, now: Date): Promise<OAuthModelRecord | undefined>
  /** The provider session of this uid, unless expired. */
  findOAuthModelByUid (kind: string, uid: string, now: Date): Promise<OAuthModelRecord | undefined>
  /** Marks the model consumed (a code exchanged, a refresh token rotated) at `now`; a consumed one stays so. */
  /**
   * Inserts the model unless an unexpired one of that kind and id exists (an expired one is replaced, its
   * consumption cleared); true when it wrote. The claim of an id that must be unique while it lives (a
   * client-credentials token's status index, core/oauth/client-token-status.ts), on any instance.
   */
  claimOAuthModel (kind: string, id: string, payload: Record<string, unknown>, expiresAt: Date, now: Date): Promise<boolean>
  /**
   * claimOAuthModel for each of `claims` (ids of `kind`), in one transaction: one commit for all, where a commit
   * per claim was most of a claim's cost. Each is true when it wrote; an id named twice is claimed once (the
   * first), the other is false. A failure of the transaction claims none.
   */
  claimOAuthModels (kind: string, claims: OAuthModelClaim[], now: Date): Promise<boolean[]>
  /**
   * Marks a single-use model (a code, a rotated refresh token, a pushed request) consumed at `now`: true when this
   * call did, false when it was consumed already or is not there. Atomic: of calls racing for one model, on any
   * instance, one gets true (RFC 6749 §4.1.2: a code is used once).
   */
  consumeOAuthModel (kind: string, id: string, now: Date): Promise<boolean>
  destroyOAuthModel (kind: string, id: string): Promise<void>
  /** Deletes every model of the grant (its codes, refresh tokens, the grant itself). */
  destroyOAuthModelsOfGrant (grantId: string): Promise<void>
  /** The unexpired models of a kind, oldest first; with `accountId`, only that user's (a user's grants). */
  listOAuthModels (kind: string, now: Date, options?: { accountId?: string }): Promise<OAuthModelRecord[]>
  /** Deletes up to `limit` models expired at `now`; returns how many (pruning calls again while it returns `limit`). */
  pruneOAuthModels (now: Date, limit: number): Promise<number>
}

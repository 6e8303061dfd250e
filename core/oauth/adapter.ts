import type { OAuthModelRecord, OAuthStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import { hashClientSecret } from './clients.js'
import type { GrantSessions } from './grant-sessions.js'
import type { ProviderSessions } from './provider-sessions.js'
import { acceptsReference, givenPayload, isReference, referenceTo, storedId, storedPayload, storedUserCode } from './stored-ids.js'

/** oidc-provider's adapter interface (its docs: "adapter"), one instance per model name. */
export interface ProviderAdapter {
  upsert (id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void>
  find (id: string): Promise<Record<string, unknown> | undefined>
  findByUserCode (userCode: string): Promise<Record<string, unknown> | undefined>
  findByUid (uid: string): Promise<Record<string, unknown> | undefined>
  consume (id: string): Promise<void>
  destroy (id: string): Promise<void>
  revokeByGrantId (grantId: string): Promise<void>
}

export interface AdapterDependencies {
  store: OAuthStore
  grantSessions: GrantSessions
  clock: Clock
  /** Ties each signed-in provider Session to its service session (core/oauth/provider-sessions.ts); without it, Sessions are tied to nothing. */
  providerSessions?: Pick<ProviderSessions, 'isLive'>
  /** The interaction the current request resumes (oidc-provider's Provider.ctx): the one place a reference is found by (core/oauth/stored-ids.ts). */
  requestInteraction?: () => Record<string, unknown> | undefined
  /** The error oidc-provider answers a single-use model of `kind` used again with (core/oauth/provider.ts); a plain Error without it. */
  usedAgain?: (kind: string) => Error
}

/** What the adapter adds to a stored grant's payload: its session's status index (oidc-provider ignores the field). */
export const STATUS_INDEX_FIELD = 'statusIndex'

/**
 * How long a client's registration is served from memory: every token request reads its client, which
 * changes rarely. A client removed on another instance is still accepted here for at most this long.
 */
export const CLIENT_CACHE_MS = 5000

/**
 * How long a device code's row outlives the code: oidc-provider checks the code's own expiry, so a device polling
 * after it hears expired_token (RFC 8628 §3.5) rather than invalid_grant, for as long again as the code lived.
 */
export const EXPIRED_DEVICE_CODE_KEPT_SECONDS = 600

/**
 * oidc-provider's models in the service's store (db/store/oauth.ts), so that every instance shares
 * clients, grants, codes, refresh tokens and the provider's sessions. Beyond storing, three rules:
 * - a model whose id is a secret is stored under the id's hash, its payload without it (core/oauth/stored-ids.ts);
 * - a client's secret is stored as its hash (a registration hands the secret over in clear once);
 * - a grant lives as one of the user's sessions (core/oauth/grant-sessions.ts): saving a new grant
 *   starts it, a model of a grant whose session has ended is not found (so its refresh token, code or
 *   device code stops at once, on every instance), and revoking a grant ends the session;
 * - a provider Session signed in to an account is not found once the service session that signed it
 *   in has ended: the browser is signed out of the provider too, on every instance;
 * - a single-use model (a code, a rotated refresh token, a pushed request) is consumed once: a request that
 *   loses the race to consume it is refused, and the grant made from it ends.
 */
export function createAdapterClass ({ store, grantSessions, clock, providerSessions, requestInteraction = () => undefined, usedAgain = (kind) => new Error(`${kind} already consumed`) }: AdapterDependencies): new (name: string) => ProviderAdapter {
  const now = () => currentDate(clock)
  const clients = new Map<string, { payload: Record<string, unknown> | undefined, readAt: number }>()

  /** The payload of a stored model for oidc-provider, with `id` (or, found otherwise, a reference to its row) and `restored` in it. */
  async function live (kind: string, record: OAuthModelRecord | undefined, id?: string, restored: Record<string, unknown> = {}): Promise<Record<string, unknown> | undefined> {
    if (record === undefined) return undefined
    const payload = givenPayload(kind, id ?? referenceTo(record.id), { ...record.payload, ...restored })
    const grantId = kind === 'Grant' ? record.id : payload.grantId
    if (typeof grantId === 'string' && !await grantSessions.isLive(grantId)) return undefined
    if (kind === 'Session' && providerSessions !== undefined && typeof payload.accountId === 'string' &&
      !await providerSessions.isLive(String(payload.uid), payload.accountId)) return undefined
    return record.consumedAt === null ? payload : { ...payload, consumed: Math.floor(record.consumedAt.getTime() / 1000) }
  }

  return class StoreAdapter implements ProviderAdapter {
    private readonly kind: string

    constructor (kind: string) {
      this.kind = kind
    }

    async upsert (id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void> {
      const keptFor = expiresIn === undefined ? undefined : this.kind === 'DeviceCode' ? expiresIn + EXPIRED_DEVICE_CODE_KEPT_SECONDS : expiresIn
      const expiresAt = keptFor === undefined ? null : new Date(now().getTime() + keptFor * 1000)
      let stored = payload
      if (this.kind === 'Client' && typeof payload.client_secret === 'string') {
        stored = { ...payload, client_secret: hashClientSecret(payload.client_secret) }
      }
      if (this.kind === 'Grant') {
        const existing = await store.findOAuthModel('Grant', id, now())
        let statusIndex = existing?.payload[STATUS_INDEX_FIELD]
        if (typeof statusIndex !== 'number') {
          statusIndex = await grantSessions.start({
            grantId: id,
            accountId: String(payload.accountId),
            clientId: String(payload.clientId),
            expiresAt: expiresAt ?? new Date(now().getTime() + 365 * 86_400_000)
          })
        }
        stored = { ...payload, [STATUS_INDEX_FIELD]: statusIndex }
      }
      await store.upsertOAuthModel(this.kind, storedId(this.kind, id), storedPayload(this.kind, stored), expiresAt)
      if (this.kind === 'Client') clients.delete(id)
    }

    async find (id: string) {
      // Apps' access tokens are JWTs, which are never stored: oidc-provider's lookup of one is a sure miss.
      if (this.kind === 'AccessToken' && id.includes('.')) return undefined
      if (this.kind === 'Client') {
        const cached = clients.get(id)
        if (cached !== undefined && clock.now() - cached.readAt < CLIENT_CACHE_MS) return cached.payload
        const payload = (await store.findOAuthModel('Client', id, now()))?.payload
        if (clients.size >= 10_000) clients.clear()
        clients.set(id, { payload, readAt: clock.now() })
        return payload
      }
      if (isReference(id) && !acceptsReference(id, requestInteraction())) return undefined
      return await live(this.kind, await store.findOAuthModel(this.kind, storedId(this.kind, id), now()), id)
    }

    async findByUserCode (userCode: string) {
      return await live(this.kind, await store.findOAuthModelByUserCode(this.kind, storedUserCode(userCode), now()), undefined, { userCode })
    }

    async findByUid (uid: string) {
      return await live(this.kind, await store.findOAuthModelByUid(this.kind, uid, now()))
    }

    async consume (id: string) {
      const stored = storedId(this.kind, id)
      if (await store.consumeOAuthModel(this.kind, stored, now())) return
      // oidc-provider read the model unconsumed, and another request consumed it since: one code (or rotated refresh
      // token) spent by two requests at once, on one instance or two. Answered as oidc-provider answers a reuse after
      // the fact: the grant made from it ends with every token of it (RFC 6749 §4.1.2, RFC 9700 §4.14.2), and this
      // request is refused, so one of the racing requests at most gets tokens, and those stop working.
      const grantId = (await store.findOAuthModel(this.kind, stored, now()))?.payload.grantId
      if (typeof grantId === 'string') await this.revokeByGrantId(grantId)
      throw usedAgain(this.kind)
    }

    async destroy (id: string) {
      await store.destroyOAuthModel(this.kind, storedId(this.kind, id))
      if (this.kind === 'Client') clients.delete(id)
    }

    async revokeByGrantId (grantId: string) {
      await grantSessions.revoke(grantId)
      await store.destroyOAuthModelsOfGrant(grantId)
    }
  }
}

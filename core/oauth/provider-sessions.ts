import type { AccountStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { Revocations } from '../revocations/revocations.js'

/**
 * The provider's browser session (oidc-provider's Session, its `_session` cookie) lives no longer than
 * the service session that signed it in (issue 33, findings 1 and 2). The interaction's sign-in names
 * that session (routes/oauth/interactions.ts); the provider keeps the pair as an oauth model of its
 * own kind, keyed by the Session's `uid` (stable: the cookie's value, its `jti`, changes at every
 * sign-in); the adapter finds no Session whose service session has ended, so the browser is a signed-out
 * one to the provider and the next authorization asks for a sign-in. Sessions are read once per
 * authorization, never on an API's hot path, so the check asks the store's own session state, not the
 * revocation set (which forgets a revocation after ACCESS_TOKEN_TTL).
 */
export const BINDING_KIND = 'SessionBinding'

/** The interaction result's field that names the service session of a sign-in (oidc-provider keeps the result as given). */
export const SERVICE_SESSION_FIELD = 'serviceSessionId'

export interface ProviderSessions {
  /** Ties the provider session `uid` of `accountId` to the service session `sessionId`, until `expiresAt`. */
  bind (uid: string, binding: { sessionId: string, accountId: string }, expiresAt: Date): Promise<void>
  /** Whether the provider session `uid` of `accountId` is bound to a service session that is still live. */
  isLive (uid: string, accountId: string): Promise<boolean>
  /** RP-initiated logout signed the browser out of the provider: the service session behind it ends too. */
  end (uid: string, client: Client): Promise<void>
}

export interface ProviderSessionsDependencies {
  store: Pick<AccountStore, 'upsertOAuthModel' | 'findOAuthModel' | 'destroyOAuthModel' | 'revokeFamily'>
  revocations: Pick<Revocations, 'storedSessionState'>
  securityEvents: Pick<SecurityEvents, 'record'>
  clock: Clock
}

export function createProviderSessions ({ store, revocations, securityEvents, clock }: ProviderSessionsDependencies): ProviderSessions {
  const now = () => currentDate(clock)
  const stillLive = async (sessionId: string) => await revocations.storedSessionState(sessionId, now()) === 'live'

  async function bindingOf (uid: string): Promise<{ sessionId: string, userId: number } | undefined> {
    const payload = (await store.findOAuthModel(BINDING_KIND, uid, now()))?.payload
    const userId = Number(payload?.accountId)
    return typeof payload?.sessionId === 'string' && Number.isSafeInteger(userId) ? { sessionId: payload.sessionId, userId } : undefined
  }

  return {
    async bind (uid, { sessionId, accountId }, expiresAt) {
      await store.upsertOAuthModel(BINDING_KIND, uid, { sessionId, accountId }, expiresAt)
    },
    async isLive (uid, accountId) {
      const binding = await bindingOf(uid)
      return binding !== undefined && String(binding.userId) === accountId && await stillLive(binding.sessionId)
    },
    async end (uid, client) {
      const binding = await bindingOf(uid)
      if (binding === undefined) return
      await store.destroyOAuthModel(BINDING_KIND, uid)
      if (!await stillLive(binding.sessionId)) return
      await store.revokeFamily(binding.sessionId, now())
      await securityEvents.record('session_revoked', client, { userId: binding.userId, sessionId: binding.sessionId, detail: { reason: 'signed out by an app (RP-initiated logout)' } })
    }
  }
}

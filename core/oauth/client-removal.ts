import type { AccountStore } from '../../db/store.js'
import { revokeClientTokensOf } from './client-token-status.js'
import { grantSessionId } from './grant-sessions.js'

export type ClientRemovalStore = Pick<AccountStore, 'findOAuthModel' | 'destroyOAuthModel' | 'listOAuthModels' | 'revokeFamily' | 'destroyOAuthModelsOfGrant' |
  'upsertOAuthModel' | 'revokeStatusIndex'>

/**
 * Removes an app's registration and ends what it was given, as revoking does (core/oauth/apps.ts): each
 * grant's session is revoked (its status bit set; every instance learns of it through the revocation log,
 * so its access tokens are refused at userinfo and by APIs reading the status list), and the grant's
 * refresh tokens and codes are deleted, and the grant with them; its client-credentials tokens are revoked. The registration goes first, so no new grant starts meanwhile.
 * Works on the store alone: the CLI runs it beside the service. False when there was no such client.
 */
export async function removeClient (store: ClientRemovalStore, clientId: string, now: Date): Promise<boolean> {
  if (await store.findOAuthModel('Client', clientId, now) === undefined) return false
  await store.destroyOAuthModel('Client', clientId)
  const grants = (await store.listOAuthModels('Grant', now)).filter(grant => grant.payload.clientId === clientId)
  for (const grant of grants) {
    // The grant's id as oidc-provider knows it (its payload's jti), which names its session; the row's own id to delete it.
    const grantId = typeof grant.payload.jti === 'string' ? grant.payload.jti : grant.id
    await store.revokeFamily(grantSessionId(grantId), now)
    await store.destroyOAuthModelsOfGrant(grantId)
    await store.destroyOAuthModel('Grant', grant.id)
  }
  // Its client-credentials tokens, which have no grant, by their own status entries.
  await revokeClientTokensOf(store, clientId, now)
  return true
}

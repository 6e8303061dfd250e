import type { OAuthStore, SettingsStore } from '../../db/store.js'
import { isLegacyRow, storedId, storedPayload } from './stored-ids.js'

/** Set once the rows stored before ids were hashed have been rewritten: later starts skip the scan. */
export const STORED_IDS_SETTING = 'oauth_model_ids'
export const STORED_IDS_HASHED = 'sha256'

/** oidc-provider's models other than clients and grants (their ids are kept): the kinds a store from before may hold keyed by secrets. */
const SECRET_KINDS = [
  'Session', 'Interaction', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'AccessToken', 'ClientCredentials',
  'RegistrationAccessToken', 'InitialAccessToken', 'PushedAuthorizationRequest', 'BackchannelAuthenticationRequest',
  'PreAuthorizedCode', 'ReplayDetection'
]

/**
 * The one-time upgrade at start of a store written before ids were hashed (issue 33, finding 6): each
 * unexpired row keyed by its secret is written again as the adapter writes it now (under the hash, no
 * id in its payload, its consumption kept), and the old row deleted. Sessions, refresh tokens and codes
 * go on working, and no raw secret stays in the store. Done in code (SQLite has no SHA-256), then recorded
 * in the settings. Expired rows are left to pruning: what they hold no longer opens anything. Idempotent,
 * so a start cut short runs it again. Returns how many rows it rewrote.
 */
export async function hashStoredIds (store: OAuthStore & SettingsStore, now: Date): Promise<number> {
  if (await store.readSetting(STORED_IDS_SETTING) === STORED_IDS_HASHED) return 0
  let rewritten = 0
  for (const kind of SECRET_KINDS) {
    for (const { id, payload, expiresAt, consumedAt } of await store.listOAuthModels(kind, now)) {
      if (!isLegacyRow(kind, payload)) continue
      const hashedId = storedId(kind, id)
      await store.upsertOAuthModel(kind, hashedId, storedPayload(kind, payload), expiresAt)
      // A code exchanged or a refresh token rotated stays so: a new row starts unconsumed.
      if (consumedAt !== null) await store.consumeOAuthModel(kind, hashedId, consumedAt)
      await store.destroyOAuthModel(kind, id)
      rewritten++
    }
  }
  await store.writeSetting(STORED_IDS_SETTING, STORED_IDS_HASHED)
  return rewritten
}

import { hkdfSync, randomBytes } from 'node:crypto'
import type { SettingsStore } from '../../db/store.js'
import { isSealed, UnsealError, type Sealer } from '../secrets/sealing.js'
import { SigningKeyEncryptionError } from '../tokens/keys.js'

const COOKIE_KEY_SETTING = 'oauth_cookie_key'

/**
 * The key that signs the OAuth provider's cookies (its browser session, an interaction under way),
 * made at the first start and shared through the store: a flow begun on one instance goes on on another.
 * With SIGNING_KEY_ENCRYPTION_KEY (`sealer`) it is stored sealed, as the signing keys are: with it in
 * clear, a copy of the store would sign cookies (issue 33, finding 6).
 */
export async function loadCookieKeys (store: SettingsStore, sealer?: Sealer): Promise<string[]> {
  const fresh = randomBytes(32).toString('base64url')
  await store.writeSetting(COOKIE_KEY_SETTING, sealer === undefined ? fresh : sealer.seal(fresh, COOKIE_KEY_SETTING), { onlyIfNone: true })
  const stored = await store.readSetting(COOKIE_KEY_SETTING)
  if (stored === undefined) throw new Error('the OAuth provider\'s cookie key was not stored')
  return [openCookieKey(stored, sealer)]
}

/**
 * The secret of the provider's DPoP nonces (features.dPoP.nonceSecret, RFC 9449 §8), derived from the
 * stored cookie key: every instance issues and takes the same nonces, and no second secret is stored.
 * HKDF with a purpose of its own keeps the two apart (a nonce says nothing of the cookie key).
 */
export function dpopNonceSecret (cookieKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', cookieKey, '', 'account-service oauth dpop nonces', 32))
}

/**
 * At start, before the provider is first built: a sealed key that does not open refuses the start (as a
 * sealed signing key does, naming the setting), and a key stored in clear before SIGNING_KEY_ENCRYPTION_KEY
 * was set is sealed now. Nothing is written otherwise (a store that cannot be written yet still starts).
 */
export async function sealCookieKey (store: SettingsStore, sealer: Sealer | undefined): Promise<void> {
  const stored = await store.readSetting(COOKIE_KEY_SETTING)
  if (stored === undefined) return
  const key = openCookieKey(stored, sealer)
  // Instances sealing it together each write a seal of the same key: any of them opens.
  if (sealer !== undefined && !isSealed(stored)) await store.writeSetting(COOKIE_KEY_SETTING, sealer.seal(key, COOKIE_KEY_SETTING))
}

function openCookieKey (stored: string, sealer: Sealer | undefined): string {
  if (!isSealed(stored)) return stored
  if (sealer === undefined) {
    throw new SigningKeyEncryptionError('SIGNING_KEY_ENCRYPTION_KEY is not set, but the OAuth provider\'s cookie key in the store is sealed: set the key that sealed it')
  }
  try {
    return sealer.open(stored, COOKIE_KEY_SETTING)
  } catch (error) {
    if (!(error instanceof UnsealError)) throw error
    throw new SigningKeyEncryptionError('SIGNING_KEY_ENCRYPTION_KEY does not open the OAuth provider\'s cookie key in the store (another key sealed it): set the key that sealed it')
  }
}

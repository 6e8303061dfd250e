import { randomBytes } from 'node:crypto'
import type { SettingsStore } from '../../db/store.js'

const COOKIE_KEY_SETTING = 'oauth_cookie_key'

/**
 * The key that signs the OAuth provider's cookies (its browser session, an interaction under way),
 * made at the first start and shared through the store: a flow begun on one instance goes on on another.
 */
export async function loadCookieKeys (store: SettingsStore): Promise<string[]> {
  await store.writeSetting(COOKIE_KEY_SETTING, randomBytes(32).toString('base64url'), { onlyIfNone: true })
  const key = await store.readSetting(COOKIE_KEY_SETTING)
  if (key === undefined) throw new Error('the OAuth provider\'s cookie key was not stored')
  return [key]
}

import { Type, type Static } from '@sinclair/typebox'
import { ConfigError, isOrigin } from './setting.js'

// Passkeys: the WebAuthn relying party.

export const WebauthnSettings = Type.Object({
  // No defaults here: they follow PUBLIC_URL, see webauthnConfig.
  WEBAUTHN_RP_ID: Type.Optional(Type.String({ minLength: 1 })),
  WEBAUTHN_RP_NAME: Type.String({ minLength: 1, default: 'account-service' }),
  WEBAUTHN_ORIGINS: Type.Optional(Type.String())
})

export interface WebauthnConfig {
  /** The passkey relying party (WebAuthn): its id (a domain), the name authenticators show, and the origins a ceremony may come from. */
  webauthn: { rpId: string, rpName: string, origins: string[] }
}

/**
 * The relying party of passkeys. By default the host of PUBLIC_URL and its origin. Every origin
 * must be the RP ID or a subdomain of it: a browser refuses any other pair, so a mismatch is a
 * setting error found at start rather than a registration that can never succeed.
 */
export function webauthnConfig (env: Static<typeof WebauthnSettings> & { PUBLIC_URL: string }): WebauthnConfig {
  const publicUrl = new URL(env.PUBLIC_URL)
  const rpId = (env.WEBAUTHN_RP_ID ?? publicUrl.hostname).trim().toLowerCase()
  // Only a setting given is judged: PUBLIC_URL's host may be an address (no passkey works there, nothing else breaks).
  if (env.WEBAUTHN_RP_ID !== undefined && (!/^[a-z0-9.-]+$/.test(rpId) || rpId.startsWith('.') || rpId.endsWith('.'))) {
    throw new ConfigError(`Invalid setting: WEBAUTHN_RP_ID "${rpId}" is not a domain such as example.com`)
  }
  const origins = (env.WEBAUTHN_ORIGINS ?? publicUrl.origin).split(',').map(origin => origin.trim()).filter(origin => origin !== '')
  if (origins.length === 0) throw new ConfigError('Invalid setting: WEBAUTHN_ORIGINS is empty')
  for (const origin of origins) {
    if (!isOrigin(origin)) throw new ConfigError(`Invalid setting: WEBAUTHN_ORIGINS has "${origin}", which is not an origin such as https://app.example.com`)
    const host = new URL(origin).hostname
    if (host !== rpId && !host.endsWith(`.${rpId}`)) {
      throw new ConfigError(`Invalid setting: WEBAUTHN_ORIGINS has "${origin}", which is not on WEBAUTHN_RP_ID "${rpId}" or a subdomain of it`)
    }
  }
  return { webauthn: { rpId, rpName: env.WEBAUTHN_RP_NAME, origins } }
}

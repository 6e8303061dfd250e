import { Type, type Static } from '@sinclair/typebox'
import type { NodeEnv } from './server.js'
import { ConfigError } from './setting.js'

// Webhooks: signed event delivery (docs/webhooks.md); without WEBHOOK_URL, nothing is sent.

export const WebhookSettings = Type.Object({
  WEBHOOK_URL: Type.Optional(Type.String({ pattern: '^https?://[^/]' })),
  WEBHOOK_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  WEBHOOK_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 30, default: 8 })
})

export interface WebhookConfig {
  /** WEBHOOK_URL and its signing secret (docs/webhooks.md); absent without WEBHOOK_URL: no event is written or sent. */
  webhooks?: {
    url: string
    /** `whsec_` and the key in base64, as Standard Webhooks writes it. */
    secret: string
    /** Delivery attempts of one event before it is given up. */
    maxAttempts: number
  }
}

/** A Standard Webhooks secret: `whsec_` and 24 to 64 random bytes in base64 (the specification's bounds). */
const WEBHOOK_SECRET_PATTERN = /^whsec_([A-Za-z0-9+/]+={0,2})$/

/**
 * WEBHOOK_URL with WEBHOOK_SECRET (required with it). In production the URL must be https:// (the
 * events carry users' addresses), but for the machine itself (http://localhost, http://127.0.0.1).
 */
export function webhookConfig (env: Static<typeof WebhookSettings> & { NODE_ENV: NodeEnv }): WebhookConfig {
  if (env.WEBHOOK_URL === undefined) return { webhooks: undefined }
  if (!URL.canParse(env.WEBHOOK_URL)) throw new ConfigError('Invalid setting: WEBHOOK_URL is not a valid http(s) URL')
  if (env.NODE_ENV === 'production' && !/^https:\/\//i.test(env.WEBHOOK_URL) && !/^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?(\/|$)/i.test(env.WEBHOOK_URL)) {
    throw new ConfigError('Invalid setting: WEBHOOK_URL must start with https:// in production (events carry users\' addresses); only http://localhost and http://127.0.0.1 are excepted')
  }
  const secret = env.WEBHOOK_SECRET?.trim()
  if (secret === undefined) throw new ConfigError('Invalid setting: WEBHOOK_SECRET is required with WEBHOOK_URL (every delivery is signed)')
  const encoded = WEBHOOK_SECRET_PATTERN.exec(secret)?.[1]
  const length = encoded === undefined || encoded.length % 4 !== 0 ? 0 : Buffer.from(encoded, 'base64').length
  if (length < 24 || length > 64) {
    throw new ConfigError('Invalid setting: WEBHOOK_SECRET must be whsec_ followed by 24 to 64 random bytes in base64 (whsec_$(openssl rand -base64 32))')
  }
  return { webhooks: { url: env.WEBHOOK_URL, secret, maxAttempts: env.WEBHOOK_MAX_ATTEMPTS } }
}

import { Type, type Static } from '@sinclair/typebox'
import { MILLISECONDS_PATTERN, parseDurationMilliseconds } from '../duration.js'
import type { NodeEnv } from './server.js'
import { ConfigError } from './setting.js'

// Mail: the SMTP server, the sender, retries from the outbox, and PUBLIC_URL, where the mailed links point.

export const MailSettings = Type.Object({
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ minLength: 3, default: 'Account Service <no-reply@localhost>' }),
  MAIL_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 30, default: 8 }),
  MAIL_RETRY_DELAY: Type.String({ pattern: MILLISECONDS_PATTERN, default: '10s' }),
  // The service's address as users reach it: mailed links, and the passkeys' relying party by default (webauthn.ts).
  PUBLIC_URL: Type.String({ pattern: '^https?://[^/]', default: 'http://localhost:3000' })
})

export interface MailConfig {
  mail: {
    /** Unset: mail is disabled (and, outside production, logged instead). */
    smtpUrl?: string
    from: string
    /** Where the links in mails point, without a trailing slash. */
    publicUrl: string
    /** Delivery attempts of one mail from the outbox before it is given up. */
    maxAttempts: number
    /** The wait before the first retry; each further one doubles it. */
    retryDelayMs: number
  }
}

export function mailConfig (env: Static<typeof MailSettings> & { NODE_ENV: NodeEnv, REQUIRE_EMAIL_VERIFICATION: boolean }): MailConfig {
  if (env.NODE_ENV === 'production' && env.REQUIRE_EMAIL_VERIFICATION && env.SMTP_URL === undefined) {
    throw new ConfigError('Invalid setting: SMTP_URL is required when REQUIRE_EMAIL_VERIFICATION=true in production (nobody could verify an email)')
  }
  const retryDelayMs = parseDurationMilliseconds(env.MAIL_RETRY_DELAY)
  if (retryDelayMs < 1) throw new ConfigError('Invalid setting: MAIL_RETRY_DELAY must be at least 1ms')
  return {
    mail: {
      smtpUrl: env.SMTP_URL,
      from: env.MAIL_FROM,
      publicUrl: env.PUBLIC_URL.replace(/\/+$/, ''),
      maxAttempts: env.MAIL_MAX_ATTEMPTS,
      retryDelayMs
    }
  }
}

import { Type, type Static } from '@sinclair/typebox'
import { parseDurationSeconds } from '../duration.js'
import { ConfigError, Duration, atLeastOneSecond } from './setting.js'

// How many requests a client, an account or an app may make per window, and the lockout after failed logins.

export const RateLimitSettings = Type.Object({
  RATE_LIMIT_ENABLED: Type.Boolean({ default: true }),
  RATE_LIMIT_WINDOW: Duration('1m'),
  RATE_LIMIT_LOGIN_MAX: Type.Integer({ minimum: 1, default: 30 }),
  RATE_LIMIT_REGISTER_MAX: Type.Integer({ minimum: 1, default: 60 }),
  RATE_LIMIT_LOGIN_FAILURES: Type.Integer({ minimum: 1, default: 5 }),
  RATE_LIMIT_LOCKOUT: Duration('30s'),
  RATE_LIMIT_LOCKOUT_MAX: Duration('15m'),
  RATE_LIMIT_RECOVERY_MAX: Type.Integer({ minimum: 1, default: 20 }),
  RATE_LIMIT_RECOVERY_ACCOUNT_MAX: Type.Integer({ minimum: 1, default: 5 }),
  RATE_LIMIT_ACCOUNT_MAX: Type.Integer({ minimum: 1, default: 10 }),
  // Token-endpoint requests per window of one OAuth client (the provider for other apps).
  RATE_LIMIT_OAUTH_TOKEN_MAX: Type.Integer({ minimum: 1, default: 600 })
})

export interface RateLimitConfig {
  rateLimit: {
    enabled: boolean
    windowSeconds: number
    /** Login requests per window from one client address. */
    loginMax: number
    registerMax: number
    /** Failed logins of one account before it is locked. */
    loginFailures: number
    /** The first lockout; each further failure doubles it, up to lockoutMaxSeconds. */
    lockoutSeconds: number
    lockoutMaxSeconds: number
    /** forgot-password, reset-password, resend-verification: per client address, and per account. */
    recoveryMax: number
    recoveryAccountMax: number
    /** Per signed-in user: profile updates, password changes, re-authentications, account deletions. */
    accountMax: number
    /** Token-endpoint requests of one OAuth client per window. */
    oauthTokenMax: number
  }
}

export function rateLimitConfig (env: Static<typeof RateLimitSettings>): RateLimitConfig {
  const windowSeconds = atLeastOneSecond(env.RATE_LIMIT_WINDOW, 'RATE_LIMIT_WINDOW')
  const lockoutSeconds = atLeastOneSecond(env.RATE_LIMIT_LOCKOUT, 'RATE_LIMIT_LOCKOUT')
  const lockoutMaxSeconds = parseDurationSeconds(env.RATE_LIMIT_LOCKOUT_MAX)
  if (lockoutMaxSeconds < lockoutSeconds) throw new ConfigError('Invalid setting: RATE_LIMIT_LOCKOUT_MAX must be at least RATE_LIMIT_LOCKOUT')
  return {
    rateLimit: {
      enabled: env.RATE_LIMIT_ENABLED,
      windowSeconds,
      loginMax: env.RATE_LIMIT_LOGIN_MAX,
      registerMax: env.RATE_LIMIT_REGISTER_MAX,
      loginFailures: env.RATE_LIMIT_LOGIN_FAILURES,
      lockoutSeconds,
      lockoutMaxSeconds,
      recoveryMax: env.RATE_LIMIT_RECOVERY_MAX,
      recoveryAccountMax: env.RATE_LIMIT_RECOVERY_ACCOUNT_MAX,
      accountMax: env.RATE_LIMIT_ACCOUNT_MAX,
      oauthTokenMax: env.RATE_LIMIT_OAUTH_TOKEN_MAX
    }
  }
}

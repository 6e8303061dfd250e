import { Type, type Static } from '@sinclair/typebox'
import { MILLISECONDS_PATTERN, parseDurationMilliseconds } from '../duration.js'
import type { NodeEnv } from './server.js'
import { Duration, atLeastOneSecond } from './setting.js'

// Accounts: password hashing, proving an address, signing in with a mailed code, the second step of a login, what an admin must have.

export const AccountSettings = Type.Object({
  PASSWORD_HASH_QUEUE_MAX: Type.Integer({ minimum: 1, default: 64 }),
  PASSWORD_HASH_TARGET: Type.String({ pattern: MILLISECONDS_PATTERN, default: '50ms' }),
  REQUIRE_EMAIL_VERIFICATION: Type.Boolean({ default: false }),
  // No default here: it follows NODE_ENV (on in production), see accountConfig.
  ADMIN_REQUIRE_MFA: Type.Optional(Type.Boolean()),
  PASSWORD_RESET_TTL: Duration('30m'),
  EMAIL_VERIFICATION_TTL: Duration('24h'),
  MFA_TOKEN_TTL: Duration('5m'),
  EMAIL_CODE_LOGIN: Type.Boolean({ default: true }),
  EMAIL_CODE_SIGNUP: Type.Boolean({ default: true })
})

export interface AccountConfig {
  /** Password hashes waiting for a hashing thread before new ones are refused (503 BUSY). */
  passwordHashQueueMax: number
  /** The time one Argon2id hash should take on this host; the first start calibrates the parameters to it (never below OWASP's minimum). */
  passwordHashTargetMs: number
  requireEmailVerification: boolean
  /** ADMIN_REQUIRE_MFA: an admin without a second factor (TOTP on, or a passkey) gets 403 MFA_ENROLLMENT_REQUIRED at /admin. */
  adminRequireMfa: boolean
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
  /** How long the mfa_token of a login answered MFA_REQUIRED may be used at POST /auth/mfa/verify. */
  mfaTokenTtlSeconds: number
  /** EMAIL_CODE_LOGIN: POST /auth/email-code and its verify answer; off, both are 404. */
  emailCodeLogin: boolean
  /** EMAIL_CODE_SIGNUP: an address with no account is mailed a code too (a password-free sign-up); off, it is mailed nothing. */
  emailCodeSignup: boolean
}

export function accountConfig (env: Static<typeof AccountSettings> & { NODE_ENV: NodeEnv }): AccountConfig {
  return {
    passwordHashQueueMax: env.PASSWORD_HASH_QUEUE_MAX,
    passwordHashTargetMs: parseDurationMilliseconds(env.PASSWORD_HASH_TARGET),
    requireEmailVerification: env.REQUIRE_EMAIL_VERIFICATION,
    adminRequireMfa: env.ADMIN_REQUIRE_MFA ?? env.NODE_ENV === 'production',
    passwordResetTtlSeconds: atLeastOneSecond(env.PASSWORD_RESET_TTL, 'PASSWORD_RESET_TTL'),
    emailVerificationTtlSeconds: atLeastOneSecond(env.EMAIL_VERIFICATION_TTL, 'EMAIL_VERIFICATION_TTL'),
    mfaTokenTtlSeconds: atLeastOneSecond(env.MFA_TOKEN_TTL, 'MFA_TOKEN_TTL'),
    emailCodeLogin: env.EMAIL_CODE_LOGIN,
    emailCodeSignup: env.EMAIL_CODE_SIGNUP
  }
}

import { Type, type Static } from '@sinclair/typebox'
import { parseDurationSeconds } from '../duration.js'
import { ConfigError, Duration, atLeastOneSecond } from './setting.js'

// Tokens, sessions and their cookies: lifetimes, the JWTs' issuer and audience, the signing keys.

export const TokenSettings = Type.Object({
  ACCESS_TOKEN_TTL: Duration('15m'),
  REFRESH_TOKEN_TTL: Duration('30d'),
  REFRESH_REUSE_GRACE: Duration('5s'),
  SESSION_MAX_AGE: Duration('90d'),
  REAUTH_MAX_AGE: Duration('10m'),
  STATUS_LIST_TTL: Duration('30s'),
  JWT_ISSUER: Type.String({ minLength: 1, default: 'account-service' }),
  JWT_AUDIENCE: Type.String({ minLength: 1, default: 'account-service' }),
  JWT_PRIVATE_KEY: Type.Optional(Type.String({ minLength: 1 })),
  SIGNING_KEY_RELOAD_INTERVAL: Duration('30s'),
  SIGNING_KEY_ROTATE_AFTER: Duration('0'),
  // 32 random bytes, base64: seals the private signing keys in the store (AES-256-GCM).
  SIGNING_KEY_ENCRYPTION_KEY: Type.Optional(Type.String({ minLength: 1 })),
  COOKIE_SECURE: Type.Boolean({ default: true })
})

export interface TokenConfig {
  accessTokenTtlSeconds: number
  /** The `ttl` of the signed Token Status List: how long a resource server may cache it. */
  statusListTtlSeconds: number
  refreshTokenTtlSeconds: number
  refreshReuseGraceSeconds: number
  /** Absolute session lifetime from login: no refresh succeeds past it. */
  sessionMaxAgeSeconds: number
  /** How recent a password proof must be for a sensitive action (an email change). */
  reauthMaxAgeSeconds: number
  jwtIssuer: string
  jwtAudience: string
  jwtPrivateKey?: string
  /** How often an instance reads the signing keys from the store (keys another instance or the CLI added). */
  signingKeyReloadSeconds: number
  /** Rotate the signing key once the newest is this old; 0: never automatically. */
  signingKeyRotateAfterSeconds: number
  /** SIGNING_KEY_ENCRYPTION_KEY, decoded: seals private signing keys at rest; absent, they are stored in clear. */
  signingKeyEncryptionKey?: Buffer
  cookieSecure: boolean
}

export function tokenConfig (env: Static<typeof TokenSettings>): TokenConfig {
  return {
    accessTokenTtlSeconds: atLeastOneSecond(env.ACCESS_TOKEN_TTL, 'ACCESS_TOKEN_TTL'),
    refreshTokenTtlSeconds: atLeastOneSecond(env.REFRESH_TOKEN_TTL, 'REFRESH_TOKEN_TTL'),
    sessionMaxAgeSeconds: atLeastOneSecond(env.SESSION_MAX_AGE, 'SESSION_MAX_AGE'),
    reauthMaxAgeSeconds: atLeastOneSecond(env.REAUTH_MAX_AGE, 'REAUTH_MAX_AGE'),
    statusListTtlSeconds: atLeastOneSecond(env.STATUS_LIST_TTL, 'STATUS_LIST_TTL'),
    signingKeyReloadSeconds: atLeastOneSecond(env.SIGNING_KEY_RELOAD_INTERVAL, 'SIGNING_KEY_RELOAD_INTERVAL'),
    refreshReuseGraceSeconds: parseDurationSeconds(env.REFRESH_REUSE_GRACE),
    jwtIssuer: env.JWT_ISSUER,
    jwtAudience: env.JWT_AUDIENCE,
    jwtPrivateKey: env.JWT_PRIVATE_KEY,
    signingKeyRotateAfterSeconds: parseDurationSeconds(env.SIGNING_KEY_ROTATE_AFTER),
    signingKeyEncryptionKey: env.SIGNING_KEY_ENCRYPTION_KEY === undefined ? undefined : parseEncryptionKey(env.SIGNING_KEY_ENCRYPTION_KEY),
    cookieSecure: env.COOKIE_SECURE
  }
}

/** 32 bytes in base64 (as `openssl rand -base64 32` prints them). */
function parseEncryptionKey (value: string): Buffer {
  const key = Buffer.from(value.trim(), 'base64')
  if (!/^[A-Za-z0-9+/]{43}=?$/.test(value.trim()) || key.length !== 32) {
    throw new ConfigError('Invalid setting: SIGNING_KEY_ENCRYPTION_KEY must be 32 random bytes in base64 (openssl rand -base64 32)')
  }
  return key
}

import { envSchema } from 'env-schema'
import { Type, type Static } from '@sinclair/typebox'
import { DURATION_PATTERN, parseDurationSeconds } from './duration.js'

export type Variant = 'header' | 'cookie'

const Duration = (defaultValue: string) => Type.String({ pattern: DURATION_PATTERN, default: defaultValue })

/** Every setting the service reads, with its default. The README's settings table mirrors this. */
const EnvironmentSchema = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('production'), Type.Literal('development'), Type.Literal('test')], { default: 'development' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  API_VARIANT: Type.Union([Type.Literal('header'), Type.Literal('cookie')], { default: 'cookie' }),
  DATABASE_URL: Type.String({ minLength: 1, default: './data/accounts.db' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  REDIS_KEY_PREFIX: Type.String({ default: 'account-service:' }),
  ACCESS_TOKEN_TTL: Duration('15m'),
  REFRESH_TOKEN_TTL: Duration('30d'),
  REFRESH_REUSE_GRACE: Duration('5s'),
  JWT_ISSUER: Type.String({ minLength: 1, default: 'account-service' }),
  JWT_AUDIENCE: Type.String({ minLength: 1, default: 'account-service' }),
  JWT_PRIVATE_KEY: Type.Optional(Type.String({ minLength: 1 })),
  SIGNING_KEY_RELOAD_INTERVAL: Duration('30s'),
  SIGNING_KEY_ROTATE_AFTER: Duration('0'),
  REFRESH_TOKEN_PRUNE_INTERVAL: Duration('1h'),
  COOKIE_SECURE: Type.Boolean({ default: true }),
  ALLOWED_ORIGINS: Type.String({ default: '' }),
  RATE_LIMIT_ENABLED: Type.Boolean({ default: true }),
  RATE_LIMIT_WINDOW: Duration('1m'),
  RATE_LIMIT_LOGIN_MAX: Type.Integer({ minimum: 1, default: 30 }),
  RATE_LIMIT_REGISTER_MAX: Type.Integer({ minimum: 1, default: 60 }),
  RATE_LIMIT_LOGIN_FAILURES: Type.Integer({ minimum: 1, default: 5 }),
  RATE_LIMIT_LOCKOUT: Duration('30s'),
  RATE_LIMIT_LOCKOUT_MAX: Duration('15m'),
  RATE_LIMIT_RECOVERY_MAX: Type.Integer({ minimum: 1, default: 20 }),
  RATE_LIMIT_RECOVERY_ACCOUNT_MAX: Type.Integer({ minimum: 1, default: 5 }),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ minLength: 3, default: 'Account Service <no-reply@localhost>' }),
  PUBLIC_URL: Type.String({ pattern: '^https?://[^/]', default: 'http://localhost:3000' }),
  REQUIRE_EMAIL_VERIFICATION: Type.Boolean({ default: false }),
  PASSWORD_RESET_TTL: Duration('30m'),
  EMAIL_VERIFICATION_TTL: Duration('24h'),
  BODY_LIMIT: Type.Integer({ minimum: 1024, default: 16384 }),
  TRUST_PROXY: Type.Boolean({ default: false }),
  // No default here: it follows NODE_ENV (on in development), see loadConfig.
  DEMO: Type.Optional(Type.Boolean()),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map(level => Type.Literal(level)), { default: 'info' })
})

type Environment = Static<typeof EnvironmentSchema>

/** The validated settings, in the units the code uses (seconds, lists). */
export interface Config {
  nodeEnv: Environment['NODE_ENV']
  host: string
  port: number
  variant: Variant
  databaseUrl: string
  /** Shared counters for several instances; absent: counters in memory, per process. */
  redis?: { url: string, keyPrefix: string }
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  refreshReuseGraceSeconds: number
  jwtIssuer: string
  jwtAudience: string
  jwtPrivateKey?: string
  /** How often an instance reads the signing keys from the store (keys another instance or the CLI added). */
  signingKeyReloadSeconds: number
  /** Rotate the signing key once the newest is this old; 0: never automatically. */
  signingKeyRotateAfterSeconds: number
  /** How often expired and revoked refresh tokens are deleted; 0: never. */
  refreshTokenPruneSeconds: number
  cookieSecure: boolean
  allowedOrigins: string[]
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
  }
  mail: {
    /** Unset: mail is disabled (and, outside production, logged instead). */
    smtpUrl?: string
    from: string
    /** Where the links in mails point, without a trailing slash. */
    publicUrl: string
  }
  requireEmailVerification: boolean
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
  bodyLimit: number
  trustProxy: boolean
  logLevel: string
  /** Serve the browser demo of the cookie variant at /demo. */
  demo: boolean
}

/** A setting that is missing or malformed; the message names it. */
export class ConfigError extends Error {}

/**
 * Builds the config from an environment (process.env by default).
 * Throws ConfigError with one line naming the first bad setting.
 */
export function loadConfig (environment: Record<string, string | undefined> = process.env): Config {
  let env: Environment
  try {
    env = envSchema<Environment>({ schema: EnvironmentSchema, data: environment, dotenv: false })
  } catch (error) {
    throw new ConfigError(`Invalid setting: ${describeEnvError(error as Error)}`)
  }
  const accessTokenTtlSeconds = parseDurationSeconds(env.ACCESS_TOKEN_TTL)
  const refreshTokenTtlSeconds = parseDurationSeconds(env.REFRESH_TOKEN_TTL)
  if (accessTokenTtlSeconds < 1) throw new ConfigError('Invalid setting: ACCESS_TOKEN_TTL must be at least 1 second')
  if (refreshTokenTtlSeconds < 1) throw new ConfigError('Invalid setting: REFRESH_TOKEN_TTL must be at least 1 second')
  const windowSeconds = parseDurationSeconds(env.RATE_LIMIT_WINDOW)
  if (windowSeconds < 1) throw new ConfigError('Invalid setting: RATE_LIMIT_WINDOW must be at least 1 second')
  const lockoutSeconds = parseDurationSeconds(env.RATE_LIMIT_LOCKOUT)
  const lockoutMaxSeconds = parseDurationSeconds(env.RATE_LIMIT_LOCKOUT_MAX)
  if (lockoutSeconds < 1) throw new ConfigError('Invalid setting: RATE_LIMIT_LOCKOUT must be at least 1 second')
  if (lockoutMaxSeconds < lockoutSeconds) throw new ConfigError('Invalid setting: RATE_LIMIT_LOCKOUT_MAX must be at least RATE_LIMIT_LOCKOUT')
  if (parseDurationSeconds(env.SIGNING_KEY_RELOAD_INTERVAL) < 1) throw new ConfigError('Invalid setting: SIGNING_KEY_RELOAD_INTERVAL must be at least 1 second')
  const allowedOrigins = env.ALLOWED_ORIGINS.split(',').map(origin => origin.trim()).filter(origin => origin !== '')
  for (const origin of allowedOrigins) {
    if (!isOrigin(origin)) throw new ConfigError(`Invalid setting: ALLOWED_ORIGINS has "${origin}", which is not an origin such as https://app.example.com`)
  }
  if (env.NODE_ENV === 'production' && env.REQUIRE_EMAIL_VERIFICATION && env.SMTP_URL === undefined) {
    throw new ConfigError('Invalid setting: SMTP_URL is required when REQUIRE_EMAIL_VERIFICATION=true in production (nobody could verify an email)')
  }
  const passwordResetTtlSeconds = parseDurationSeconds(env.PASSWORD_RESET_TTL)
  const emailVerificationTtlSeconds = parseDurationSeconds(env.EMAIL_VERIFICATION_TTL)
  if (passwordResetTtlSeconds < 1) throw new ConfigError('Invalid setting: PASSWORD_RESET_TTL must be at least 1 second')
  if (emailVerificationTtlSeconds < 1) throw new ConfigError('Invalid setting: EMAIL_VERIFICATION_TTL must be at least 1 second')
  if (/^postgres(ql)?:/.test(env.DATABASE_URL) && !URL.canParse(env.DATABASE_URL)) {
    throw new ConfigError('Invalid setting: DATABASE_URL is not a valid postgres:// URL')
  }
  return {
    nodeEnv: env.NODE_ENV,
    host: env.HOST,
    port: env.PORT,
    variant: env.API_VARIANT,
    databaseUrl: env.DATABASE_URL,
    redis: env.REDIS_URL === undefined ? undefined : { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX },
    accessTokenTtlSeconds,
    refreshTokenTtlSeconds,
    refreshReuseGraceSeconds: parseDurationSeconds(env.REFRESH_REUSE_GRACE),
    jwtIssuer: env.JWT_ISSUER,
    jwtAudience: env.JWT_AUDIENCE,
    jwtPrivateKey: env.JWT_PRIVATE_KEY,
    signingKeyReloadSeconds: parseDurationSeconds(env.SIGNING_KEY_RELOAD_INTERVAL),
    signingKeyRotateAfterSeconds: parseDurationSeconds(env.SIGNING_KEY_ROTATE_AFTER),
    refreshTokenPruneSeconds: parseDurationSeconds(env.REFRESH_TOKEN_PRUNE_INTERVAL),
    cookieSecure: env.COOKIE_SECURE,
    allowedOrigins,
    rateLimit: {
      enabled: env.RATE_LIMIT_ENABLED,
      windowSeconds,
      loginMax: env.RATE_LIMIT_LOGIN_MAX,
      registerMax: env.RATE_LIMIT_REGISTER_MAX,
      loginFailures: env.RATE_LIMIT_LOGIN_FAILURES,
      lockoutSeconds,
      lockoutMaxSeconds,
      recoveryMax: env.RATE_LIMIT_RECOVERY_MAX,
      recoveryAccountMax: env.RATE_LIMIT_RECOVERY_ACCOUNT_MAX
    },
    mail: { smtpUrl: env.SMTP_URL, from: env.MAIL_FROM, publicUrl: env.PUBLIC_URL.replace(/\/+$/, '') },
    requireEmailVerification: env.REQUIRE_EMAIL_VERIFICATION,
    passwordResetTtlSeconds,
    emailVerificationTtlSeconds,
    bodyLimit: env.BODY_LIMIT,
    trustProxy: env.TRUST_PROXY,
    logLevel: env.LOG_LEVEL,
    demo: env.DEMO ?? env.NODE_ENV === 'development'
  }
}

function isOrigin (value: string): boolean {
  try {
    const url = new URL(value)
    return url.origin === value
  } catch {
    return false
  }
}

// env-schema reports "env/PORT must be integer"; keep the setting's name and the reason.
function describeEnvError (error: Error): string {
  const match = /^env\/([A-Z_]+) (.*)$/s.exec(error.message)
  if (match) return `${match[1]} ${match[2]}`
  const missing = /must have required property '([A-Z_]+)'/.exec(error.message)
  if (missing) return `${missing[1]} is required`
  return error.message
}

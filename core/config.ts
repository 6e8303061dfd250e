import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import { isPostgresUrl } from '../db/database-url.js'
import { DURATION_PATTERN, MILLISECONDS_PATTERN, parseDurationMilliseconds, parseDurationSeconds } from './duration.js'

export type Variant = 'header' | 'cookie'

const Duration = (defaultValue: string) => Type.String({ pattern: DURATION_PATTERN, default: defaultValue })

/** Every setting the service reads, with its default. docs/configuration.md's table mirrors this. */
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
  SESSION_MAX_AGE: Duration('90d'),
  REAUTH_MAX_AGE: Duration('10m'),
  SECURITY_EVENT_RETENTION: Duration('90d'),
  // The audit trail (admin actions) is kept a year: what an operator did is asked about long after the fact.
  AUDIT_RETENTION: Duration('365d'),
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
  RATE_LIMIT_ACCOUNT_MAX: Type.Integer({ minimum: 1, default: 10 }),
  // Token-endpoint requests per window of one OAuth client (the provider for other apps).
  RATE_LIMIT_OAUTH_TOKEN_MAX: Type.Integer({ minimum: 1, default: 600 }),
  // RFC 7591 dynamic client registration, only with this initial access token; unset: none.
  OAUTH_REGISTRATION_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  OAUTH_TOKEN_FAST_PATH: Type.Boolean({ default: true }),
  PASSWORD_HASH_QUEUE_MAX: Type.Integer({ minimum: 1, default: 64 }),
  // Users GET /users/:id answers from memory (core/users/user-cache.ts); 0 reads the store every time.
  USER_CACHE_MAX: Type.Integer({ minimum: 0, default: 100000 }),
  PASSWORD_HASH_TARGET: Type.String({ pattern: MILLISECONDS_PATTERN, default: '50ms' }),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ minLength: 3, default: 'Account Service <no-reply@localhost>' }),
  MAIL_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 30, default: 8 }),
  MAIL_RETRY_DELAY: Type.String({ pattern: MILLISECONDS_PATTERN, default: '10s' }),
  PUBLIC_URL: Type.String({ pattern: '^https?://[^/]', default: 'http://localhost:3000' }),
  // Signed event delivery (docs/webhooks.md); unset, nothing is sent.
  WEBHOOK_URL: Type.Optional(Type.String({ pattern: '^https?://[^/]' })),
  WEBHOOK_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  WEBHOOK_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 30, default: 8 }),
  // The passkey relying party; no defaults here: they follow PUBLIC_URL, see webauthnSettings.
  WEBAUTHN_RP_ID: Type.Optional(Type.String({ minLength: 1 })),
  WEBAUTHN_RP_NAME: Type.String({ minLength: 1, default: 'account-service' }),
  WEBAUTHN_ORIGINS: Type.Optional(Type.String()),
  STATUS_LIST_TTL: Duration('30s'),
  REQUIRE_EMAIL_VERIFICATION: Type.Boolean({ default: false }),
  // No default here: it follows NODE_ENV (on in production), see loadConfig.
  ADMIN_REQUIRE_MFA: Type.Optional(Type.Boolean()),
  PASSWORD_RESET_TTL: Duration('30m'),
  EMAIL_VERIFICATION_TTL: Duration('24h'),
  MFA_TOKEN_TTL: Duration('5m'),
  BODY_LIMIT: Type.Integer({ minimum: 1024, default: 16384 }),
  // The longest one request may take to arrive and be answered, and the longest a connection may stay silent.
  REQUEST_TIMEOUT: Type.String({ pattern: MILLISECONDS_PATTERN, default: '30s' }),
  // false, true (not in production), a hop count, or a comma-separated list of proxy addresses and CIDRs: see parseTrustProxy.
  TRUST_PROXY: Type.String({ minLength: 1, default: 'false' }),
  // 32 random bytes, base64: seals the private signing keys in the store (AES-256-GCM).
  SIGNING_KEY_ENCRYPTION_KEY: Type.Optional(Type.String({ minLength: 1 })),
  // No default here: it follows NODE_ENV (off in production), see loadConfig.
  DOCS: Type.Optional(Type.Boolean()),
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  // The hosted pages (reset, verification, account console): on in every mode, since the mailed links point at them.
  PAGES: Type.Boolean({ default: true }),
  // Sign-in with OpenID Connect providers: comma-separated names; each reads OIDC_<NAME>_ISSUER, _CLIENT_ID, ... (see oidcProviders).
  OIDC_PROVIDERS: Type.String({ default: '' }),
  OIDC_DISCOVERY_TIMEOUT: Duration('5s'),
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
  /** The `ttl` of the signed Token Status List: how long a resource server may cache it. */
  statusListTtlSeconds: number
  refreshTokenTtlSeconds: number
  refreshReuseGraceSeconds: number
  /** Absolute session lifetime from login: no refresh succeeds past it. */
  sessionMaxAgeSeconds: number
  /** How recent a password proof must be for a sensitive action (an email change). */
  reauthMaxAgeSeconds: number
  /** How long security events are kept. */
  securityEventRetentionSeconds: number
  /** How long the audit trail (admin actions) is kept: at least securityEventRetentionSeconds. */
  auditRetentionSeconds: number
  /** Password hashes waiting for a hashing thread before new ones are refused (503 BUSY). */
  passwordHashQueueMax: number
  /** How many users the user cache keeps for GET /users/:id (least recently read go first); 0: none. */
  userCacheMax: number
  /** The time one Argon2id hash should take on this host; the first start calibrates the parameters to it (never below OWASP's minimum). */
  passwordHashTargetMs: number
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
    /** Per signed-in user: profile updates, password changes, re-authentications, account deletions. */
    accountMax: number
    /** Token-endpoint requests of one OAuth client per window. */
    oauthTokenMax: number
  }
  /** OAUTH_REGISTRATION_TOKEN: the initial access token of dynamic client registration (RFC 7591); unset, none. */
  oauthRegistrationToken?: string
  /**
   * OAUTH_TOKEN_FAST_PATH: the token endpoint's client-credentials grant answered by the service in its common case
   * (core/oauth/client-credentials-grant.ts); false, oidc-provider answers every token request.
   */
  oauthTokenFastPath: boolean
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
  /** WEBHOOK_URL and its signing secret (docs/webhooks.md); absent without WEBHOOK_URL: no event is written or sent. */
  webhooks?: {
    url: string
    /** `whsec_` and the key in base64, as Standard Webhooks writes it. */
    secret: string
    /** Delivery attempts of one event before it is given up. */
    maxAttempts: number
  }
  /** The passkey relying party (WebAuthn): its id (a domain), the name authenticators show, and the origins a ceremony may come from. */
  webauthn: { rpId: string, rpName: string, origins: string[] }
  requireEmailVerification: boolean
  /** ADMIN_REQUIRE_MFA: an admin without a second factor (TOTP on, or a passkey) gets 403 MFA_ENROLLMENT_REQUIRED at /admin. */
  adminRequireMfa: boolean
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
  /** How long the mfa_token of a login answered MFA_REQUIRED may be used at POST /auth/mfa/verify. */
  mfaTokenTtlSeconds: number
  bodyLimit: number
  /**
   * REQUEST_TIMEOUT: the bound on one request from its first byte to its answer (Fastify's requestTimeout)
   * and on a connection's silence (connectionTimeout). A stalled or trickled body no longer holds a connection.
   */
  requestTimeoutMs: number
  /** Fastify's trustProxy: false, true (every hop), a hop count, or the proxies' addresses and CIDRs. */
  trustProxy: boolean | number | string[]
  /** SIGNING_KEY_ENCRYPTION_KEY, decoded: seals private signing keys at rest; absent, they are stored in clear. */
  signingKeyEncryptionKey?: Buffer
  /** Serve /docs and /openapi.json. */
  docs: boolean
  /** METRICS_PORT: /metrics on a listener of its own (METRICS_HOST); absent, on the public one outside production, nowhere in production. */
  metrics: { port?: number, host: string }
  logLevel: string
  /** Serve the pages: /reset-password and /verify-email (where mailed links point), the account console at /account. */
  pages: boolean
  oidc: {
    providers: OidcProviderConfig[]
    /** How long the start waits for one provider's discovery document before leaving the provider out. */
    discoveryTimeoutSeconds: number
  }
}

/** One OpenID Connect provider people may sign in with (OIDC_PROVIDERS). */
export interface OidcProviderConfig {
  /** Lower-case, as in the callback path /auth/oidc/<name>/callback. */
  name: string
  /** What the sign-in button says: "Sign in with <label>". */
  label: string
  issuer: string
  clientId: string
  clientSecret: string
  scopes: string
}

/** REQUEST_TIMEOUT's ceiling: 30 s is far more than any of our requests (bodies of at most BODY_LIMIT) needs. */
export const MAX_REQUEST_TIMEOUT_MS = 30_000

/** A setting that is missing or malformed; the message names it. */
export class ConfigError extends Error {}

/**
 * Builds the config from an environment (process.env by default).
 * Throws ConfigError with one line naming the first bad setting.
 */
export function loadConfig (environment: Record<string, string | undefined> = process.env): Config {
  const env = readEnvironment(environment)
  const accessTokenTtlSeconds = parseDurationSeconds(env.ACCESS_TOKEN_TTL)
  const refreshTokenTtlSeconds = parseDurationSeconds(env.REFRESH_TOKEN_TTL)
  if (accessTokenTtlSeconds < 1) throw new ConfigError('Invalid setting: ACCESS_TOKEN_TTL must be at least 1 second')
  if (refreshTokenTtlSeconds < 1) throw new ConfigError('Invalid setting: REFRESH_TOKEN_TTL must be at least 1 second')
  const sessionMaxAgeSeconds = parseDurationSeconds(env.SESSION_MAX_AGE)
  if (sessionMaxAgeSeconds < 1) throw new ConfigError('Invalid setting: SESSION_MAX_AGE must be at least 1 second')
  const reauthMaxAgeSeconds = parseDurationSeconds(env.REAUTH_MAX_AGE)
  if (reauthMaxAgeSeconds < 1) throw new ConfigError('Invalid setting: REAUTH_MAX_AGE must be at least 1 second')
  const securityEventRetentionSeconds = parseDurationSeconds(env.SECURITY_EVENT_RETENTION)
  if (securityEventRetentionSeconds < 1) throw new ConfigError('Invalid setting: SECURITY_EVENT_RETENTION must be at least 1 second')
  const auditRetentionSeconds = parseDurationSeconds(env.AUDIT_RETENTION)
  if (auditRetentionSeconds < securityEventRetentionSeconds) throw new ConfigError('Invalid setting: AUDIT_RETENTION must be at least SECURITY_EVENT_RETENTION')
  const statusListTtlSeconds = parseDurationSeconds(env.STATUS_LIST_TTL)
  if (statusListTtlSeconds < 1) throw new ConfigError('Invalid setting: STATUS_LIST_TTL must be at least 1 second')
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
  if (parseDurationMilliseconds(env.MAIL_RETRY_DELAY) < 1) throw new ConfigError('Invalid setting: MAIL_RETRY_DELAY must be at least 1ms')
  const passwordResetTtlSeconds = parseDurationSeconds(env.PASSWORD_RESET_TTL)
  const emailVerificationTtlSeconds = parseDurationSeconds(env.EMAIL_VERIFICATION_TTL)
  if (passwordResetTtlSeconds < 1) throw new ConfigError('Invalid setting: PASSWORD_RESET_TTL must be at least 1 second')
  if (emailVerificationTtlSeconds < 1) throw new ConfigError('Invalid setting: EMAIL_VERIFICATION_TTL must be at least 1 second')
  const mfaTokenTtlSeconds = parseDurationSeconds(env.MFA_TOKEN_TTL)
  if (mfaTokenTtlSeconds < 1) throw new ConfigError('Invalid setting: MFA_TOKEN_TTL must be at least 1 second')
  if (isPostgresUrl(env.DATABASE_URL) && !URL.canParse(env.DATABASE_URL)) {
    throw new ConfigError('Invalid setting: DATABASE_URL is not a valid postgres:// URL')
  }
  const requestTimeoutMs = parseDurationMilliseconds(env.REQUEST_TIMEOUT)
  if (requestTimeoutMs < 1 || requestTimeoutMs > MAX_REQUEST_TIMEOUT_MS) {
    throw new ConfigError('Invalid setting: REQUEST_TIMEOUT must be between 1ms and 30s (a request that may last forever holds its connection forever)')
  }
  const trustProxy = parseTrustProxy(env.TRUST_PROXY)
  const webauthn = webauthnSettings(env)
  const oidcProviders = parseOidcProviders(env.OIDC_PROVIDERS, environment, env.NODE_ENV)
  const discoveryTimeoutSeconds = parseDurationSeconds(env.OIDC_DISCOVERY_TIMEOUT)
  if (discoveryTimeoutSeconds < 1) throw new ConfigError('Invalid setting: OIDC_DISCOVERY_TIMEOUT must be at least 1 second')
  const webhooks = webhookSettings(env)
  const signingKeyEncryptionKey = env.SIGNING_KEY_ENCRYPTION_KEY === undefined ? undefined : parseEncryptionKey(env.SIGNING_KEY_ENCRYPTION_KEY)
  if (env.NODE_ENV === 'production') refuseUnsafeProductionSettings(env, trustProxy, { ALLOWED_ORIGINS: allowedOrigins, WEBAUTHN_ORIGINS: webauthn.origins })
  return {
    nodeEnv: env.NODE_ENV,
    host: env.HOST,
    port: env.PORT,
    variant: env.API_VARIANT,
    databaseUrl: env.DATABASE_URL,
    redis: env.REDIS_URL === undefined ? undefined : { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX },
    accessTokenTtlSeconds,
    statusListTtlSeconds,
    refreshTokenTtlSeconds,
    refreshReuseGraceSeconds: parseDurationSeconds(env.REFRESH_REUSE_GRACE),
    sessionMaxAgeSeconds,
    reauthMaxAgeSeconds,
    securityEventRetentionSeconds,
    auditRetentionSeconds,
    passwordHashQueueMax: env.PASSWORD_HASH_QUEUE_MAX,
    userCacheMax: env.USER_CACHE_MAX,
    passwordHashTargetMs: parseDurationMilliseconds(env.PASSWORD_HASH_TARGET),
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
      recoveryAccountMax: env.RATE_LIMIT_RECOVERY_ACCOUNT_MAX,
      accountMax: env.RATE_LIMIT_ACCOUNT_MAX,
      oauthTokenMax: env.RATE_LIMIT_OAUTH_TOKEN_MAX
    },
    oauthRegistrationToken: env.OAUTH_REGISTRATION_TOKEN,
    oauthTokenFastPath: env.OAUTH_TOKEN_FAST_PATH,
    mail: {
      smtpUrl: env.SMTP_URL,
      from: env.MAIL_FROM,
      publicUrl: env.PUBLIC_URL.replace(/\/+$/, ''),
      maxAttempts: env.MAIL_MAX_ATTEMPTS,
      retryDelayMs: parseDurationMilliseconds(env.MAIL_RETRY_DELAY)
    },
    webhooks,
    webauthn,
    requireEmailVerification: env.REQUIRE_EMAIL_VERIFICATION,
    adminRequireMfa: env.ADMIN_REQUIRE_MFA ?? env.NODE_ENV === 'production',
    passwordResetTtlSeconds,
    emailVerificationTtlSeconds,
    mfaTokenTtlSeconds,
    bodyLimit: env.BODY_LIMIT,
    requestTimeoutMs,
    trustProxy,
    signingKeyEncryptionKey,
    docs: env.DOCS ?? env.NODE_ENV !== 'production',
    metrics: { port: env.METRICS_PORT, host: env.METRICS_HOST },
    logLevel: env.LOG_LEVEL,
    pages: env.PAGES,
    oidc: { providers: oidcProviders, discoveryTimeoutSeconds }
  }
}

const PROVIDER_NAME = /^[a-z][a-z0-9_]{0,31}$/

/**
 * OIDC_PROVIDERS=google,corp and, for each name, OIDC_<NAME>_ISSUER, _CLIENT_ID, _CLIENT_SECRET
 * (required), _SCOPES (default "openid email profile") and _LABEL (default the name). The names
 * per provider are not in the fixed schema, so they are read here from the same environment.
 * An http:// issuer is refused in production (tokens and the client secret would travel in clear).
 */
function parseOidcProviders (list: string, environment: Record<string, string | undefined>, nodeEnv: Environment['NODE_ENV']): OidcProviderConfig[] {
  const names = list.split(',').map(name => name.trim().toLowerCase()).filter(name => name !== '')
  const seen = new Set<string>()
  return names.map(name => {
    if (!PROVIDER_NAME.test(name)) throw new ConfigError(`Invalid setting: OIDC_PROVIDERS has "${name}"; a name is a letter then up to 31 letters, digits or _`)
    // The routes beside /auth/oidc/:provider.
    if (name === 'providers' || name === 'exchange') throw new ConfigError(`Invalid setting: OIDC_PROVIDERS cannot name a provider "${name}" (a route of its own)`)
    if (seen.has(name)) throw new ConfigError(`Invalid setting: OIDC_PROVIDERS names "${name}" twice`)
    seen.add(name)
    const prefix = `OIDC_${name.toUpperCase()}_`
    const read = (key: string) => {
      const value = environment[prefix + key]?.trim()
      return value === undefined || value === '' ? undefined : value
    }
    const required = (key: string) => {
      const value = read(key)
      if (value === undefined) throw new ConfigError(`Invalid setting: ${prefix}${key} is required (provider "${name}" is in OIDC_PROVIDERS)`)
      return value
    }
    const issuer = required('ISSUER')
    if (!/^https?:\/\/[^/]/.test(issuer) || !URL.canParse(issuer)) throw new ConfigError(`Invalid setting: ${prefix}ISSUER must be an https:// URL`)
    if (nodeEnv === 'production' && !issuer.startsWith('https://')) throw new ConfigError(`Invalid setting: ${prefix}ISSUER must start with https:// in production`)
    const scopes = read('SCOPES') ?? 'openid email profile'
    if (!scopes.split(/\s+/).includes('openid')) throw new ConfigError(`Invalid setting: ${prefix}SCOPES must include openid`)
    return { name, label: read('LABEL') ?? name, issuer, clientId: required('CLIENT_ID'), clientSecret: required('CLIENT_SECRET'), scopes }
  })
}

// proxy-addr's names for address ranges, which Fastify's trustProxy accepts beside addresses and CIDRs.
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * TRUST_PROXY in the forms Fastify's trustProxy takes: "false", "true" (trust
 * every hop: only behind a proxy that overwrites X-Forwarded-For), a hop count
 * ("1": the address the nearest proxy saw), or the proxies' addresses and CIDRs.
 * Fastify (proxy-addr) then reads X-Forwarded-For from the right, past trusted hops only.
 */
function parseTrustProxy (value: string): Config['trustProxy'] {
  const trimmed = value.trim()
  if (trimmed === 'false') return false
  if (trimmed === 'true') return true
  if (/^\d+$/.test(trimmed)) {
    const hops = Number(trimmed)
    if (hops > 100) throw new ConfigError('Invalid setting: TRUST_PROXY hop count must be at most 100')
    return hops === 0 ? false : hops
  }
  const entries = trimmed.split(',').map(entry => entry.trim()).filter(entry => entry !== '')
  for (const entry of entries) {
    if (!isProxyEntry(entry)) {
      throw new ConfigError(`Invalid setting: TRUST_PROXY has "${entry}", which is not true, false, a hop count, or a proxy address or CIDR such as 10.0.0.0/8`)
    }
  }
  if (entries.length === 0) throw new ConfigError('Invalid setting: TRUST_PROXY is empty')
  return entries
}

function isProxyEntry (entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true
  const [address, prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
}

/** 32 bytes in base64 (as `openssl rand -base64 32` prints them). */
function parseEncryptionKey (value: string): Buffer {
  const key = Buffer.from(value.trim(), 'base64')
  if (!/^[A-Za-z0-9+/]{43}=?$/.test(value.trim()) || key.length !== 32) {
    throw new ConfigError('Invalid setting: SIGNING_KEY_ENCRYPTION_KEY must be 32 random bytes in base64 (openssl rand -base64 32)')
  }
  return key
}

/** A Standard Webhooks secret: `whsec_` and 24 to 64 random bytes in base64 (the specification's bounds). */
const WEBHOOK_SECRET_PATTERN = /^whsec_([A-Za-z0-9+/]+={0,2})$/

/**
 * WEBHOOK_URL with WEBHOOK_SECRET (required with it). In production the URL must be https:// (the
 * events carry users' addresses), but for the machine itself (http://localhost, http://127.0.0.1).
 */
function webhookSettings (env: Environment): Config['webhooks'] {
  if (env.WEBHOOK_URL === undefined) return undefined
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
  return { url: env.WEBHOOK_URL, secret, maxAttempts: env.WEBHOOK_MAX_ATTEMPTS }
}

/** A plain-HTTP origin production still takes: the machine itself (a browser treats it as a secure context). */
const LOOPBACK_HTTP_ORIGIN = /^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/

/** Settings that are fine on a laptop and unsafe on the internet: production refuses them. */
function refuseUnsafeProductionSettings (env: Environment, trustProxy: Config['trustProxy'], origins: Record<'ALLOWED_ORIGINS' | 'WEBAUTHN_ORIGINS', string[]>): void {
  if (trustProxy === true) {
    throw new ConfigError('Invalid setting: TRUST_PROXY=true is refused in production (any client could choose its address); give the hop count or the proxies\' addresses')
  }
  if (!env.COOKIE_SECURE) throw new ConfigError('Invalid setting: COOKIE_SECURE=false is refused in production (tokens would travel over plain HTTP)')
  if (!/^https:\/\//i.test(env.PUBLIC_URL) && !/^http:\/\/localhost(:\d+)?(\/|$)/i.test(env.PUBLIC_URL)) {
    throw new ConfigError('Invalid setting: PUBLIC_URL must start with https:// in production (mailed links carry tokens); only http://localhost is excepted')
  }
  // An http:// origin is a page anyone on its network path can rewrite: trusted with credentialed
  // cross-origin requests (ALLOWED_ORIGINS) or passkey assertions (WEBAUTHN_ORIGINS), it lends them out.
  for (const [setting, list] of Object.entries(origins)) {
    const plain = list.find(origin => origin.startsWith('http://') && !LOOPBACK_HTTP_ORIGIN.test(origin))
    if (plain !== undefined) {
      throw new ConfigError(`Invalid setting: ${setting} has "${plain}", which is not https:// (refused in production; only http://localhost and http://127.0.0.1 are excepted)`)
    }
  }
}

/**
 * The relying party of passkeys. By default the host of PUBLIC_URL and its origin. Every origin
 * must be the RP ID or a subdomain of it: a browser refuses any other pair, so a mismatch is a
 * setting error found at start rather than a registration that can never succeed.
 */
function webauthnSettings (env: Environment): Config['webauthn'] {
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
  return { rpId, rpName: env.WEBAUTHN_RP_NAME, origins }
}

function isOrigin (value: string): boolean {
  try {
    const url = new URL(value)
    return url.origin === value
  } catch {
    return false
  }
}

let environmentCheck: TypeCheck<typeof EnvironmentSchema> | undefined

/**
 * The settings the schema names, read from the environment: text converted where the schema wants a
 * number or a boolean, defaults filled in, everything checked; any other variable is left alone.
 * TypeBox's own compiler checks them, not Ajv (env-schema's): compiling this schema and JSON
 * Schema's meta-schema with Ajv took about 80 ms of every start, a sixth of its budget (issue 23);
 * TypeBox compiles it in a millisecond or two. Throws ConfigError naming the first bad setting.
 */
function readEnvironment (environment: Record<string, string | undefined>): Environment {
  environmentCheck ??= TypeCompiler.Compile(EnvironmentSchema)
  const given: Record<string, string> = {}
  for (const name of Object.keys(EnvironmentSchema.properties)) {
    const value = environment[name]
    if (value !== undefined) given[name] = value
  }
  const env = Value.Default(EnvironmentSchema, Value.Convert(EnvironmentSchema, given))
  const error = environmentCheck.Errors(env).First()
  if (error !== undefined) {
    const name = error.path.split('/')[1] ?? error.path
    if (given[name] === undefined) throw new ConfigError(`Invalid setting: ${name} is required`)
    const choices = (EnvironmentSchema.properties[name as keyof Environment] as { anyOf?: Array<{ const?: unknown }> }).anyOf?.map(choice => choice.const)
    if (choices?.every(choice => typeof choice === 'string') === true) throw new ConfigError(`Invalid setting: ${name} must be one of ${choices.join(', ')}`)
    throw new ConfigError(`Invalid setting: ${name} is not valid (${error.message.charAt(0).toLowerCase()}${error.message.slice(1)})`)
  }
  return env as Environment
}

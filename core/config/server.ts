import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import { MILLISECONDS_PATTERN, parseDurationMilliseconds } from '../duration.js'
import { ConfigError, isOrigin } from './setting.js'

// The process and its HTTP listener: mode, address, which requests it takes and how long they may take, what it serves.

export type Variant = 'header' | 'cookie'

export const ServerSettings = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('production'), Type.Literal('development'), Type.Literal('test')], { default: 'development' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  API_VARIANT: Type.Union([Type.Literal('header'), Type.Literal('cookie')], { default: 'cookie' }),
  ALLOWED_ORIGINS: Type.String({ default: '' }),
  BODY_LIMIT: Type.Integer({ minimum: 1024, default: 16384 }),
  // The longest one request may take to arrive and be answered, and the longest a connection may stay silent.
  REQUEST_TIMEOUT: Type.String({ pattern: MILLISECONDS_PATTERN, default: '30s' }),
  // false, true (not in production), a hop count, or a comma-separated list of proxy addresses and CIDRs: see parseTrustProxy.
  TRUST_PROXY: Type.String({ minLength: 1, default: 'false' }),
  // No default here: it follows NODE_ENV (off in production), see serverConfig.
  DOCS: Type.Optional(Type.Boolean()),
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  // The hosted pages (reset, verification, account console): on in every mode, since the mailed links point at them.
  PAGES: Type.Boolean({ default: true }),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map(level => Type.Literal(level)), { default: 'info' })
})

export type NodeEnv = Static<typeof ServerSettings>['NODE_ENV']

export interface ServerConfig {
  nodeEnv: NodeEnv
  host: string
  port: number
  variant: Variant
  allowedOrigins: string[]
  bodyLimit: number
  /**
   * REQUEST_TIMEOUT: the bound on one request from its first byte to its answer (Fastify's requestTimeout)
   * and on a connection's silence (connectionTimeout). A stalled or trickled body no longer holds a connection.
   */
  requestTimeoutMs: number
  /** Fastify's trustProxy: false, true (every hop), a hop count, or the proxies' addresses and CIDRs. */
  trustProxy: boolean | number | string[]
  /** Serve /docs and /openapi.json. */
  docs: boolean
  /** METRICS_PORT: /metrics on a listener of its own (METRICS_HOST); absent, on the public one outside production, nowhere in production. */
  metrics: { port?: number, host: string }
  logLevel: string
  /** Serve the pages: /reset-password and /verify-email (where mailed links point), the account console at /account. */
  pages: boolean
}

/** REQUEST_TIMEOUT's ceiling: 30 s is far more than any of our requests (bodies of at most BODY_LIMIT) needs. */
export const MAX_REQUEST_TIMEOUT_MS = 30_000

function allowedOrigins (env: Static<typeof ServerSettings>): string[] {
  const origins = env.ALLOWED_ORIGINS.split(',').map(origin => origin.trim()).filter(origin => origin !== '')
  for (const origin of origins) {
    if (!isOrigin(origin)) throw new ConfigError(`Invalid setting: ALLOWED_ORIGINS has "${origin}", which is not an origin such as https://app.example.com`)
  }
  return origins
}

export function serverConfig (env: Static<typeof ServerSettings>): ServerConfig {
  const origins = allowedOrigins(env)
  const requestTimeoutMs = parseDurationMilliseconds(env.REQUEST_TIMEOUT)
  if (requestTimeoutMs < 1 || requestTimeoutMs > MAX_REQUEST_TIMEOUT_MS) {
    throw new ConfigError('Invalid setting: REQUEST_TIMEOUT must be between 1ms and 30s (a request that may last forever holds its connection forever)')
  }
  return {
    nodeEnv: env.NODE_ENV,
    host: env.HOST,
    port: env.PORT,
    variant: env.API_VARIANT,
    allowedOrigins: origins,
    bodyLimit: env.BODY_LIMIT,
    requestTimeoutMs,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    docs: env.DOCS ?? env.NODE_ENV !== 'production',
    metrics: { port: env.METRICS_PORT, host: env.METRICS_HOST },
    logLevel: env.LOG_LEVEL,
    pages: env.PAGES
  }
}

// proxy-addr's names for address ranges, which Fastify's trustProxy accepts beside addresses and CIDRs.
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * TRUST_PROXY in the forms Fastify's trustProxy takes: "false", "true" (trust
 * every hop: only behind a proxy that overwrites X-Forwarded-For), a hop count
 * ("1": the address the nearest proxy saw), or the proxies' addresses and CIDRs.
 * Fastify (proxy-addr) then reads X-Forwarded-For from the right, past trusted hops only.
 */
function parseTrustProxy (value: string): ServerConfig['trustProxy'] {
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

import { Type, type Static } from '@sinclair/typebox'
import { isPostgresUrl } from '../../db/database-url.js'
import { parseDurationSeconds } from '../duration.js'
import { ConfigError, Duration, atLeastOneSecond } from './setting.js'

// The store and what it keeps: where it is, the shared counters, the user cache, how long events and tokens stay.

export const StoreSettings = Type.Object({
  DATABASE_URL: Type.String({ minLength: 1, default: './data/accounts.db' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  REDIS_KEY_PREFIX: Type.String({ default: 'account-service:' }),
  // Users GET /users/:id answers from memory (core/users/user-cache.ts); 0 reads the store every time.
  USER_CACHE_MAX: Type.Integer({ minimum: 0, default: 100000 }),
  SECURITY_EVENT_RETENTION: Duration('90d'),
  // The audit trail (admin actions) is kept a year: what an operator did is asked about long after the fact.
  AUDIT_RETENTION: Duration('365d'),
  REFRESH_TOKEN_PRUNE_INTERVAL: Duration('1h')
})

export interface StoreConfig {
  databaseUrl: string
  /** Shared counters for several instances; absent: counters in memory, per process. */
  redis?: { url: string, keyPrefix: string }
  /** How many users the user cache keeps for GET /users/:id (least recently read go first); 0: none. */
  userCacheMax: number
  /** How long security events are kept. */
  securityEventRetentionSeconds: number
  /** How long the audit trail (admin actions) is kept: at least securityEventRetentionSeconds. */
  auditRetentionSeconds: number
  /** How often expired and revoked refresh tokens are deleted; 0: never. */
  refreshTokenPruneSeconds: number
}

export function storeConfig (env: Static<typeof StoreSettings>): StoreConfig {
  const securityEventRetentionSeconds = atLeastOneSecond(env.SECURITY_EVENT_RETENTION, 'SECURITY_EVENT_RETENTION')
  const auditRetentionSeconds = parseDurationSeconds(env.AUDIT_RETENTION)
  if (auditRetentionSeconds < securityEventRetentionSeconds) throw new ConfigError('Invalid setting: AUDIT_RETENTION must be at least SECURITY_EVENT_RETENTION')
  if (isPostgresUrl(env.DATABASE_URL) && !URL.canParse(env.DATABASE_URL)) {
    throw new ConfigError('Invalid setting: DATABASE_URL is not a valid postgres:// URL')
  }
  return {
    databaseUrl: env.DATABASE_URL,
    redis: env.REDIS_URL === undefined ? undefined : { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX },
    userCacheMax: env.USER_CACHE_MAX,
    securityEventRetentionSeconds,
    auditRetentionSeconds,
    refreshTokenPruneSeconds: parseDurationSeconds(env.REFRESH_TOKEN_PRUNE_INTERVAL)
  }
}

import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../../core/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Only with REDIS_URL: check `fastify.hasDecorator('redis')`. */
    redis: Redis
  }
}

export interface RedisOptions {
  redis: Config['redis']
}

/**
 * With REDIS_URL, one ioredis client shared by the service as `fastify.redis`
 * and closed with it: counters that several instances must agree on (rate
 * limits) live there. Every key starts with REDIS_KEY_PREFIX, so deployments
 * can share one Redis. Without REDIS_URL nothing is decorated.
 *
 * Redis holds only counters, so the service starts and serves while Redis is
 * away (the limits then do not apply) and uses it again when it returns. The
 * start waits for the first connection at most connectTimeout (1 s).
 * (@fastify/redis would instead hold the start until Fastify's plugin timeout.)
 */
export default fp<RedisOptions>(async (fastify, { redis }) => {
  if (redis === undefined) return
  // ioredis (about 25 MB) is loaded only when REDIS_URL names a server.
  const { Redis } = await import('ioredis')
  const client = new Redis(redis.url, {
    keyPrefix: redis.keyPrefix,
    connectTimeout: 1000,
    maxRetriesPerRequest: 1,
    // While Redis is away a command fails at once instead of waiting in ioredis's queue for the
    // next reconnect attempt (seconds, growing with each attempt): no request waits for a counter.
    enableOfflineQueue: false,
    // Connected below, before the first request, since without the queue nothing may be sent earlier.
    lazyConnect: true
  })
  // ioredis reports each failed reconnect; say once that Redis is away, and once that it is back.
  let reachable = true
  client.on('error', (error) => {
    if (!reachable) return
    reachable = false
    fastify.log.warn({ err: error }, 'Redis unreachable: rate limits and the login lockout are not applied until it answers')
  })
  client.on('ready', () => {
    if (reachable) return
    reachable = true
    fastify.log.info('Redis reachable again')
  })
  // A failed first connection is reported by the 'error' listener; ioredis goes on reconnecting.
  await client.connect().catch(() => {})
  fastify.decorate('redis', client)
  fastify.addHook('onClose', async () => { client.disconnect() })
}, { name: 'redis' })

import fp from 'fastify-plugin'
import { Redis } from 'ioredis'
import type { Config } from '../../src/config.js'

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
 * away (the limits then do not apply) and uses it again when it returns.
 * (@fastify/redis would instead hold the start until Fastify's plugin timeout.)
 */
export default fp<RedisOptions>(async (fastify, { redis }) => {
  if (redis === undefined) return
  const client = new Redis(redis.url, {
    keyPrefix: redis.keyPrefix,
    connectTimeout: 1000,
    // Fail a command after one reconnect attempt instead of holding the request through many.
    maxRetriesPerRequest: 1
  })
  // ioredis reports each failed reconnect; say once that Redis is away, and once that it is back.
  let reachable = true
  client.on('error', (error) => {
    if (!reachable) return
    reachable = false
    fastify.log.warn({ err: error }, 'Redis unreachable: rate limits are not applied until it answers')
  })
  client.on('ready', () => {
    if (reachable) return
    reachable = true
    fastify.log.info('Redis reachable again')
  })
  fastify.decorate('redis', client)
  fastify.addHook('onClose', async () => { client.disconnect() })
}, { name: 'redis' })

import fp from 'fastify-plugin'
import { createUserCache, type UserCache, type UserCacheOptions } from '../../core/users/user-cache.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The users GET /users/:id shows, kept in memory and dropped as the revocation log tells of their changes. */
    userCache: UserCache
  }
}

/** The user cache (core/users/user-cache.ts) as `fastify.userCache`, following the store's log. */
export default fp<UserCacheOptions>(async (fastify, options) => {
  fastify.decorate('userCache', createUserCache({ store: fastify.store, revocations: fastify.revocations, clock: fastify.clock }, options))
}, { name: 'user-cache', dependencies: ['store', 'clock'] })

import fp from 'fastify-plugin'
import { createUserImport, type UserImport, type UserImportOptions } from '../../core/accounts/import.js'

declare module 'fastify' {
  interface FastifyInstance {
    userImport: UserImport
  }
}

/** The import of users with other systems' password hashes (core/accounts/import.ts) as `fastify.userImport`. */
export default fp<UserImportOptions>(async (fastify, options) => {
  fastify.decorate('userImport', createUserImport({ store: fastify.store, clock: fastify.clock }, options))
}, { name: 'user-import', dependencies: ['clock', 'store'] })

import fp from 'fastify-plugin'
import { createStatusLists, type StatusListOptions, type StatusLists } from '../../core/revocations/status-lists.js'

declare module 'fastify' {
  interface FastifyInstance {
    statusList: StatusLists
  }
}

/** The Token Status List of our access tokens (core/revocations/status-lists.ts); the revocation set comes with the store. */
export default fp<StatusListOptions>(async (fastify, options) => {
  const { revocations, accessTokens, clock } = fastify
  fastify.decorate('statusList', createStatusLists({ revocations, accessTokens, clock }, options))
}, { name: 'status-list', dependencies: ['store', 'tokens', 'clock'] })

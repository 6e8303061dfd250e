import fp from 'fastify-plugin'
import { createSessions, type Sessions, type SessionsOptions } from '../../core/sessions/sessions.js'

declare module 'fastify' {
  interface FastifyInstance {
    sessions: Sessions
  }
}

/** Sessions and their refresh tokens (core/sessions/sessions.ts) as `fastify.sessions`. */
export default fp<SessionsOptions>(async (fastify, options) => {
  const { store, clock, accessTokens, securityEvents, statusList } = fastify
  fastify.decorate('sessions', createSessions({ store, clock, accessTokens, securityEvents, statusList, memberships: store }, options))
}, { name: 'sessions', dependencies: ['store', 'tokens', 'security-events', 'status-list'] })

import fp from 'fastify-plugin'
import { createSecurityEvents, type SecurityEvents } from '../../core/events/security-events.js'

declare module 'fastify' {
  interface FastifyInstance {
    securityEvents: SecurityEvents
  }
}

/** The security events (core/events/security-events.ts), stored and logged on Fastify's logger; the webhooks plugin subscribes to them. */
export default fp(async (fastify) => {
  fastify.decorate('securityEvents', createSecurityEvents({ store: fastify.store, clock: fastify.clock, log: fastify.log }))
}, { name: 'security-events', dependencies: ['store', 'clock'] })

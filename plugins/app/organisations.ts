import fp from 'fastify-plugin'
import { createOrganisations, type Organisations } from '../../core/organisations/organisations.js'

declare module 'fastify' {
  interface FastifyInstance {
    organisations: Organisations
  }
}

/** Organisations, members and roles (core/organisations/organisations.ts) as `fastify.organisations`. */
export default fp(async (fastify) => {
  const { store, clock, sessions, securityEvents, webhooks } = fastify
  fastify.decorate('organisations', createOrganisations({ store, clock, sessions, securityEvents, webhooks }))
}, { name: 'organisations', dependencies: ['store', 'clock', 'sessions', 'security-events', 'webhooks'] })

import fp from 'fastify-plugin'
import { createIdentities, type Identities } from '../../core/identities/identities.js'

declare module 'fastify' {
  interface FastifyInstance {
    identities: Identities
  }
}

/** Accounts and provider identities (core/identities/identities.ts): who a provider sign-in signs in. */
export default fp(async (fastify) => {
  fastify.decorate('identities', createIdentities({
    store: fastify.store,
    clock: fastify.clock,
    sessions: fastify.sessions,
    securityEvents: fastify.securityEvents,
    account: fastify.account,
    mailer: fastify.mailer,
    webhooks: fastify.webhooks
  }))
}, { name: 'identities', dependencies: ['store', 'sessions', 'security-events', 'account', 'mailer', 'webhooks'] })

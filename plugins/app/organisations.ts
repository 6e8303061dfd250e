import fp from 'fastify-plugin'
import { createInvitations, type Invitations, type InvitationsOptions } from '../../core/organisations/invitations.js'
import { createOrganisations, type Organisations } from '../../core/organisations/organisations.js'

declare module 'fastify' {
  interface FastifyInstance {
    organisations: Organisations
    invitations: Invitations
  }
}

/** Organisations, members and roles (core/organisations/organisations.ts) and their invitations (./invitations.ts). */
export default fp<InvitationsOptions>(async (fastify, options) => {
  const { store, clock, sessions, securityEvents, webhooks, mailer, account } = fastify
  const organisations = createOrganisations({ store, clock, sessions, securityEvents, webhooks })
  fastify.decorate('organisations', organisations)
  fastify.decorate('invitations', createInvitations({ store, clock, mailer, organisations, proveAddress: account.proveAddress }, options))
}, { name: 'organisations', dependencies: ['store', 'clock', 'sessions', 'security-events', 'webhooks', 'mailer', 'account'] })

import fp from 'fastify-plugin'
import { createAdmin, type Admin, type AdminOptions } from '../../core/admin/admin.js'

declare module 'fastify' {
  interface FastifyInstance {
    admin: Admin
  }
}

/** The operators' rules (core/admin/admin.ts) as `fastify.admin`. */
export default fp<AdminOptions>(async (fastify, options) => {
  const { store, clock, sessions, securityEvents, mfa, mailer, webhooks, userImport } = fastify
  fastify.decorate('admin', createAdmin({ store, clock, sessions, securityEvents, mfa, mailer, webhooks, userImport }, options))
}, { name: 'admin', dependencies: ['store', 'sessions', 'security-events', 'mfa', 'mailer', 'webhooks', 'user-import'] })

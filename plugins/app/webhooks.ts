import fp from 'fastify-plugin'
import { presentAdminUser } from '../../core/schemas/admin.js'
import { createWebhooks, type PresentUser, type Webhooks, type WebhooksOptions } from '../../core/webhooks/webhooks.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: Webhooks
  }
}

/** A `user.*` event's data: the user as the admin API shows it (the contract's rule). */
const presentUser: PresentUser = (user) => ({ ...presentAdminUser(user) })

/**
 * Signed webhooks (core/webhooks/webhooks.ts), subscribed to the security events, and their delivery worker,
 * started once the service is up; nothing without WEBHOOK_URL.
 */
export default fp<WebhooksOptions>(async (fastify, options) => {
  const log = fastify.log.child({ plugin: 'webhooks' })
  const webhooks = createWebhooks({ store: fastify.store, clock: fastify.clock, log, presentUser, securityEvents: fastify.securityEvents }, options)
  fastify.decorate('webhooks', webhooks)
  // Events left by a previous run (a crash, a receiver outage) go out once the service is up.
  fastify.addHook('onReady', async () => { webhooks.start() })
  // Before the store closes (plugins close in reverse order): deliveries under way finish.
  fastify.addHook('onClose', async () => { await webhooks.close() })
}, { name: 'webhooks', dependencies: ['store', 'clock', 'security-events'] })

import fp from 'fastify-plugin'
import { createWebhooks, type PresentUser, type Webhooks, type WebhooksOptions } from '../../core/webhooks/webhooks.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: Webhooks
  }
}

/**
 * Provisional: the user as a `user.*` event shows it. The admin API's presenter (core/schemas/admin.ts,
 * presentAdminUser) replaces it when that branch is merged, so events show users as the admin API does.
 */
const presentUser: PresentUser = (user) => ({
  id: user.id,
  email: user.email,
  first_name: user.firstName,
  last_name: user.lastName,
  username: user.username,
  email_verified: user.emailVerified,
  created_at: user.createdAt.toISOString()
})

/** Signed webhooks (core/webhooks/webhooks.ts) and their delivery worker, started once the service is up; nothing without WEBHOOK_URL. */
export default fp<WebhooksOptions>(async (fastify, options) => {
  const webhooks = createWebhooks({ store: fastify.store, clock: fastify.clock, log: fastify.log.child({ plugin: 'webhooks' }), presentUser }, options)
  fastify.decorate('webhooks', webhooks)
  // Events left by a previous run (a crash, a receiver outage) go out once the service is up.
  fastify.addHook('onReady', async () => { webhooks.start() })
  // Before the store closes (plugins close in reverse order): deliveries under way finish.
  fastify.addHook('onClose', async () => { await webhooks.close() })
}, { name: 'webhooks', dependencies: ['store', 'clock'] })

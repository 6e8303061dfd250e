import fp from 'fastify-plugin'
import { createMailer, type Mailer, type MailerOptions } from '../../core/mail/mailer.js'

declare module 'fastify' {
  interface FastifyInstance {
    mailer: Mailer
  }
}

/** The mailer (core/mail/mailer.ts) and its outbox worker, started once the service is up. */
export default fp<MailerOptions>(async (fastify, options) => {
  const mailer = await createMailer({ store: fastify.store, clock: fastify.clock, log: fastify.log.child({ plugin: 'mailer' }) }, options)
  fastify.decorate('mailer', mailer)
  // Mail left by a previous run (a crash, an outage) goes out once the service is up.
  fastify.addHook('onReady', async () => { mailer.start() })
  // Before the store closes (plugins close in reverse order): queued jobs reach the outbox, deliveries under way finish.
  fastify.addHook('onClose', async () => { await mailer.close() })
}, { name: 'mailer', dependencies: ['store', 'clock'] })

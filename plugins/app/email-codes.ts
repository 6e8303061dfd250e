import fp from 'fastify-plugin'
import { createEmailCodes, type EmailCodes, type EmailCodesOptions } from '../../core/email-codes/email-codes.js'

declare module 'fastify' {
  interface FastifyInstance {
    emailCodes: EmailCodes
  }
}

/** The mailed sign-in codes (core/email-codes/email-codes.ts) as `fastify.emailCodes`. */
export default fp<EmailCodesOptions>(async (fastify, options) => {
  const { store, clock, mailer, log } = fastify
  fastify.decorate('emailCodes', createEmailCodes({ store, clock, mailer, log }, options))
}, { name: 'email-codes', dependencies: ['store', 'clock', 'mailer'] })

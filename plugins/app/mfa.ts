import fp from 'fastify-plugin'
import { createMfa, type Mfa, type MfaOptions } from '../../core/mfa/mfa.js'

declare module 'fastify' {
  interface FastifyInstance {
    mfa: Mfa
  }
}

/** The second factor (core/mfa/mfa.ts) as `fastify.mfa`. */
export default fp<MfaOptions>(async (fastify, options) => {
  const { store, clock, sessions, securityEvents, mailer } = fastify
  fastify.decorate('mfa', createMfa({ store, clock, sessions, securityEvents, mailer }, options))
}, { name: 'mfa', dependencies: ['store', 'sessions', 'security-events', 'mailer'] })

import fp from 'fastify-plugin'
import { createPasskeys, type Passkeys, type PasskeysOptions } from '../../core/passkeys/passkeys.js'

declare module 'fastify' {
  interface FastifyInstance {
    passkeys: Passkeys
  }
}

/** Passkeys (core/passkeys/passkeys.ts) as `fastify.passkeys`. */
export default fp<PasskeysOptions>(async (fastify, options) => {
  const { store, clock, log, sessions, securityEvents, authentication, mailer } = fastify
  fastify.decorate('passkeys', createPasskeys({ store, clock, log, sessions, securityEvents, authentication, mailer }, options))
}, { name: 'passkeys', dependencies: ['store', 'sessions', 'security-events', 'authentication', 'mailer'] })

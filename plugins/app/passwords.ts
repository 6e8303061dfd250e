import fp from 'fastify-plugin'
import { createPasswords, type Passwords, type PasswordsOptions } from '../../core/passwords/passwords.js'

declare module 'fastify' {
  interface FastifyInstance {
    passwords: Passwords
  }
}

/** Password hashing (core/passwords/passwords.ts) as `fastify.passwords`; its threads end with the app. */
export default fp<PasswordsOptions>(async (fastify, options) => {
  const passwords = await createPasswords({ store: fastify.store, log: fastify.log }, options)
  fastify.addHook('onClose', () => passwords.close())
  fastify.decorate('passwords', passwords)
}, { name: 'passwords', dependencies: ['store'] })

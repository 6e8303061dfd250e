import fp from 'fastify-plugin'
import { createAuthentication, type Authentication, type AuthenticationOptions } from '../../core/authentication/authentication.js'

declare module 'fastify' {
  interface FastifyInstance {
    authentication: Authentication
  }
}

/** Every check of a password, mailed code or second-factor code (core/authentication/authentication.ts) as `fastify.authentication`. */
export default fp<AuthenticationOptions>(async (fastify, options) => {
  const { store, passwords, loginThrottle, sessions, securityEvents, mfa, emailCodes, log } = fastify
  fastify.decorate('authentication', createAuthentication({ store, passwords, loginThrottle, sessions, securityEvents, mfa, emailCodes, log }, options))
}, { name: 'authentication', dependencies: ['store', 'passwords', 'login-throttle', 'sessions', 'security-events', 'mfa', 'email-codes'] })

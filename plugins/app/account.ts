import fp from 'fastify-plugin'
import { createAccount, type AccountLifecycle, type AccountOptions } from '../../core/accounts/account.js'

declare module 'fastify' {
  interface FastifyInstance {
    account: AccountLifecycle
  }
}

/** The account's rules (core/accounts/account.ts): registration, profile, passwords, deletion, mailed links. */
export default fp<AccountOptions>(async (fastify, options) => {
  fastify.decorate('account', createAccount({
    store: fastify.store,
    clock: fastify.clock,
    log: fastify.log,
    passwords: fastify.passwords,
    mailer: fastify.mailer,
    sessions: fastify.sessions,
    securityEvents: fastify.securityEvents,
    authentication: fastify.authentication,
    loginThrottle: fastify.loginThrottle,
    mfa: fastify.mfa,
    webhooks: fastify.webhooks,
    emailCodes: fastify.emailCodes
  }, options))
}, { name: 'account', dependencies: ['store', 'passwords', 'mailer', 'sessions', 'security-events', 'authentication', 'login-throttle', 'mfa', 'webhooks', 'email-codes'] })

import fp from 'fastify-plugin'
import { createLoginThrottle, type LoginThrottle, type LoginThrottleOptions } from '../../core/lockout/login-throttle.js'

declare module 'fastify' {
  interface FastifyInstance {
    loginThrottle: LoginThrottle
  }
}

/** The account lockout (core/lockout/login-throttle.ts) as `fastify.loginThrottle`, counted in fastify.redis when there is one. */
export default fp<LoginThrottleOptions>(async (fastify, options) => {
  const redis = fastify.hasDecorator('redis') ? fastify.redis : undefined
  fastify.decorate('loginThrottle', createLoginThrottle({ clock: fastify.clock, log: fastify.log, redis }, options))
}, { name: 'login-throttle', dependencies: ['redis'] })

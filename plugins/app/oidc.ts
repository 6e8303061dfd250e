import fp from 'fastify-plugin'
import { createOidc, type Oidc, type OidcOptions } from '../../core/oidc/providers.js'

declare module 'fastify' {
  interface FastifyInstance {
    oidc: Oidc
  }
}

/** Sign-in with OpenID providers (core/oidc/providers.ts): each provider is discovered here, at start. */
export default fp<OidcOptions>(async (fastify, options) => {
  fastify.decorate('oidc', await createOidc({ store: fastify.store, clock: fastify.clock, log: fastify.log }, options))
}, { name: 'oidc', dependencies: ['store'] })

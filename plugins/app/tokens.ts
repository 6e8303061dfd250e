import fp from 'fastify-plugin'
import { createAccessTokens, type AccessTokens, type TokensOptions } from '../../core/tokens/access-tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    accessTokens: AccessTokens
  }
}

/** The access tokens and their key ring (core/tokens/): loaded before the server is ready, reloaded on a timer until it closes. */
export default fp<TokensOptions>(async (fastify, options) => {
  const accessTokens = await createAccessTokens({ store: fastify.store, clock: fastify.clock, log: fastify.log }, options)
  fastify.decorate<AccessTokens>('accessTokens', accessTokens)
  fastify.addHook('onClose', async () => { await accessTokens.close() })
}, { name: 'tokens', dependencies: ['store', 'clock'] })

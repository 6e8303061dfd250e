import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { JwksResponse } from '../../core/schemas/auth.js'

/** The public keys of our access tokens, so that other services verify them without a shared secret. */
const wellKnownRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/.well-known/jwks.json', {
    schema: { summary: 'JSON Web Key Set of the access-token signing keys', tags: ['operations'], response: { 200: JwksResponse } }
  }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300')
    return fastify.accessTokens.jwks
  })
}

export default wellKnownRoutes

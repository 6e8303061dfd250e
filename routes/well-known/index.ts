import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { JwksResponse } from '../../core/schemas/auth.js'

/** The public keys of our access tokens and ID tokens, so that other services verify them without a shared secret. */
const wellKnownRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/.well-known/jwks.json', {
    schema: { summary: 'JSON Web Key Set of the signing keys (access tokens, ID tokens, status lists)', tags: ['operations'], response: { 200: JwksResponse } }
  }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300')
    return await fastify.accessTokens.publishedJwks()
  })
}

export default wellKnownRoutes

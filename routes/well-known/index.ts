import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { JwksResponse } from '../../core/schemas/auth.js'
import { answerAnyOrigin, PUBLIC_DOCUMENT_CONFIG } from '../public-documents.js'

/** The public keys of our access tokens and ID tokens, so that other services (and browser apps, any origin) verify them without a shared secret. */
const wellKnownRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/.well-known/jwks.json', {
    schema: { summary: 'JSON Web Key Set of the signing keys (access tokens, ID tokens, status lists)', tags: ['operations'], response: { 200: JwksResponse } },
    config: PUBLIC_DOCUMENT_CONFIG
  }, async (_request, reply) => {
    answerAnyOrigin(reply).header('cache-control', 'public, max-age=300')
    return await fastify.accessTokens.publishedJwks()
  })
}

export default wellKnownRoutes

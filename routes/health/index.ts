import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../core/schemas/errors.js'

/** Liveness and readiness, for a process supervisor or a load balancer. */
const healthRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/health', {
    schema: { summary: 'Liveness: the process serves', tags: ['operations'], response: { 200: Type.Object({ status: Type.Literal('ok') }) } }
  }, async () => ({ status: 'ok' as const }))

  // A failed ping throws the store's StoreUnavailableError: 503 STORE_UNAVAILABLE in the error shape.
  fastify.get('/ready', {
    schema: {
      summary: 'Readiness: the store answers and its migrations are applied',
      tags: ['operations'],
      response: { 200: Type.Object({ status: Type.Literal('ready') }), ...errorResponses(503) }
    }
  }, async () => {
    await fastify.store.ping()
    return { status: 'ready' as const }
  })
}

export default healthRoutes

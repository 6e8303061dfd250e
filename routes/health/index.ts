import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'

/** Liveness: the process is up and serving. */
const healthRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/health', {
    schema: { summary: 'Liveness', response: { 200: Type.Object({ status: Type.Literal('ok') }) } }
  }, async () => ({ status: 'ok' as const }))
}

export default healthRoutes

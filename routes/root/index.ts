import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { VERSION } from '../../core/version.js'

export interface RootOptions {
  /** The account console's address, where pages are served (PAGES) and the cookie variant is mounted. */
  consoleUrl?: string
  /** The API reference's address, where it is served (DOCS). */
  docsUrl?: string
}

const ServiceMap = Type.Object({
  name: Type.Literal('account-service'),
  version: Type.String(),
  health: Type.String({ description: 'Readiness: 200 when the service can serve' }),
  docs: Type.Union([Type.String(), Type.Null()], { description: 'The API reference, or null where DOCS is off' })
})

/**
 * `GET /`, the address `npm start` prints: a person who opens it in a browser lands on the account
 * console; where no console is served, the answer says where the service's documents are instead of a 404.
 */
const rootRoutes: FastifyPluginAsync<RootOptions> = async (fastify, { consoleUrl, docsUrl }) => {
  const map = { name: 'account-service' as const, version: VERSION, health: '/health', docs: docsUrl ?? null }
  fastify.get('/', { schema: { hide: true, response: { 200: ServiceMap } } }, async (_request, reply) => {
    if (consoleUrl !== undefined) return reply.redirect(consoleUrl)
    return map
  })
}

export default rootRoutes

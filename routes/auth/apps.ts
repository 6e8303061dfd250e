import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AppNotFoundError } from '../../core/errors.js'
import { AppParams, AppsResponse, presentApp } from '../../core/schemas/apps.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { clientOf } from '../client.js'
import { claimsOf } from '../guards.js'

/** The apps one has let in through the OAuth / OpenID provider, and taking their access back. */
const appsRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { transport, signedIn } = fastify.routeContext
  const { apps } = fastify

  fastify.get('/apps', {
    schema: {
      security: transport.security.access,
      summary: 'The apps with access to one\'s account (OAuth / OpenID grants), last used first',
      response: { 200: AppsResponse, ...errorResponses(401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => ({ apps: (await apps.list(claimsOf(request).userId)).map(presentApp) }))

  fastify.delete('/apps/:clientId', {
    schema: {
      security: transport.security.access,
      summary: 'Take an app\'s access back: its refresh tokens stop, its access tokens show revoked in the status list',
      params: AppParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request, reply) => {
    if (!await apps.revoke(claimsOf(request).userId, request.params.clientId, clientOf(request))) throw new AppNotFoundError()
    return reply.code(204).send(null)
  })
}

export default appsRoutes

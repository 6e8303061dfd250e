import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AccessTokenResponse } from '../../core/schemas/auth.js'
import { OrgIdParams } from '../../core/schemas/active-organisation.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { claimsOf } from '../guards.js'

/**
 * The session's active organisation (docs/organisations.md): the access token alone is enough, and the answer is a
 * new access token handed over as the variant hands a refreshed one (variant A: the body; variant B: the cookie too).
 */
const activeOrganisationRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { transport, signedIn } = fastify.routeContext
  const { sessions } = fastify

  fastify.post('/:orgId/activate', {
    schema: {
      summary: 'Make an organisation one is a member of active: a new access token carries it as `org: { id, slug, role }`',
      description: 'Refreshes keep it while the membership lasts, with its current role; after removal the next refresh has no `org`. ' +
        'A non-member gets 404 ORG_NOT_FOUND.',
      security: transport.security.access,
      params: OrgIdParams,
      response: { 200: AccessTokenResponse, ...errorResponses(400, 401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request, reply) => {
    const tokens = await sessions.activateOrganisation(claimsOf(request), request.params.orgId)
    transport.deliver(reply, tokens)
    return { accessToken: tokens.accessToken }
  })

  fastify.post('/deactivate', {
    schema: {
      summary: 'Drop the active organisation: a new access token without `org`, and refreshes without it',
      security: transport.security.access,
      response: { 200: AccessTokenResponse, ...errorResponses(401, 500, 503) }
    },
    onRequest: signedIn
  }, async (request, reply) => {
    const tokens = await sessions.deactivateOrganisation(claimsOf(request))
    transport.deliver(reply, tokens)
    return { accessToken: tokens.accessToken }
  })
}

export default activeOrganisationRoutes

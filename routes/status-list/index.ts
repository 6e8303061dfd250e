import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { STATUS_LIST_MAX } from '../../core/revocations/status-list.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { answerAnyOrigin, PUBLIC_DOCUMENT_CONFIG } from '../public-documents.js'

const StatusListParams = Type.Object({ list: Type.Integer({ minimum: 1, maximum: STATUS_LIST_MAX }) })

/**
 * GET /statuslists/:list: the signed Token Status List that the `status` claim of our access tokens
 * points to. Any origin may read it (it tells only which indexes are revoked); caches may keep it
 * for its ttl, and revalidate with If-None-Match.
 */
const statusListRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { statusList } = fastify
  const cacheControl = `public, max-age=${statusList.ttlSeconds}`
  fastify.get('/statuslists/:list', {
    schema: {
      summary: 'Token Status List (application/statuslist+jwt) of the access tokens: bit idx is 1 when the session is revoked',
      description: 'Each session gets a random index (the IETF draft\'s advice: an index tells nothing of other sessions or of how many there are), in list 1 (2^20 bits) at first; ' +
        'more lists are used as the sessions grow, the token\'s `status.status_list.uri` names its list.',
      tags: ['operations'],
      params: StatusListParams,
      response: {
        200: { description: 'The signed list', content: { 'application/statuslist+jwt': { schema: Type.String() } } },
        304: { description: 'The list named by If-None-Match is still the current one', type: 'null' },
        ...errorResponses(400)
      }
    },
    config: PUBLIC_DOCUMENT_CONFIG
  }, function sendStatusList (request, reply) {
    // Synchronous (the list is signed ahead, from memory): no promise per poll of a resource server.
    const signed = statusList.signed(request.params.list)
    answerAnyOrigin(reply)
      .header('access-control-expose-headers', 'ETag')
      .header('cache-control', cacheControl)
      .header('etag', signed.etag)
    if (request.headers['if-none-match'] === signed.etag) reply.code(304).send()
    else reply.type('application/statuslist+jwt').send(signed.jwt)
  })
}

export default statusListRoutes

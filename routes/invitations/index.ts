import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../core/schemas/errors.js'
import { AcceptedInvitationResponse, AcceptInvitationBody, InvitationPreviewResponse, presentInvitationPreview, presentOrg } from '../../core/schemas/organisations.js'
import { NO_CREDENTIALS } from '../transport.js'
import { limitEach, perAddress, perUser } from '../rate-limits.js'

/** POST /invitations/accept: an organisation's mailed invitation, accepted by the signed-in account of its address. */
const invitationRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { transport, rateLimit, signedIn, actorOf } = fastify.routeContext
  const { invitations } = fastify

  fastify.post('/accept', {
    schema: {
      summary: 'Accept an invitation to an organisation, signed in as the invited address',
      description: 'The token is the mailed link\'s (#token=…). Already a member: the same 200, the role unchanged. Another account: ' +
        '403 INVITATION_EMAIL_MISMATCH, and the invitation stays usable. Used, withdrawn, expired or unknown: 400 INVALID_RESET_TOKEN ' +
        '(as a used reset link). Accepting proves the address: on a never-verified account what its registrant set up is removed, ' +
        'and its other sessions end; this one stays.',
      security: transport.security.access,
      body: AcceptInvitationBody,
      response: { 200: AcceptedInvitationResponse, ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    // Per user: tokens are not guessable, but a signed-in client should not be able to try them at will either.
    preHandler: limitEach(fastify, rateLimit, [perUser('invitation-accept', rateLimit)])
  }, async (request) => {
    const { org, role } = await invitations.accept(await actorOf(request), request.body.token)
    return { org: presentOrg(org, role) }
  })

  fastify.post('/preview', {
    schema: {
      summary: 'What an invitation is, before any sign-in: the organisation, who invites, the address and the role',
      description: 'For the page the mailed link opens (/invitations#token=…), which names them before the visitor signs in or up. ' +
        'The token is the only credential (a POST, so it stays out of URLs and logs); this shows no more than the mail did. ' +
        'Used, withdrawn, expired or unknown: 400 INVALID_RESET_TOKEN, as accept.',
      security: NO_CREDENTIALS,
      body: AcceptInvitationBody,
      response: { 200: InvitationPreviewResponse, ...errorResponses(400, 413, 415, 429, 500, 503) }
    },
    // Per client address, before the body is read, as the login: the tokens are not guessable, and trying them costs.
    onRequest: limitEach(fastify, rateLimit, [perAddress('invitation-preview', rateLimit.loginMax)])
  }, async (request) => presentInvitationPreview(await invitations.preview(request.body.token)))
}

export default invitationRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../core/schemas/errors.js'
import {
  ChangeRoleBody, CreatedOrgView, CreateOrgBody, InvitationParams, InvitationsResponse, InvitationView, InviteBody, MemberParams, MembersResponse,
  MemberView, OrgParams, OrgsResponse, UpdateOrgBody, presentInvitation, presentMember, presentMembership, presentOrg
} from '../../core/schemas/organisations.js'
import type { OrganisationOfMember } from '../../core/organisations/organisations.js'
import { claimsOf } from '../guards.js'
import { limitEach, perUser } from '../rate-limits.js'

const NOT_A_MEMBER = 'A non-member gets 404 ORG_NOT_FOUND, as for an organisation that does not exist.'

const presentWithDate = ({ org, role }: OrganisationOfMember) => ({ ...presentOrg(org, role), created_at: org.createdAt.toISOString() })

/** /orgs: organisations, their members and roles (docs/organisations.md), in both variants. */
const orgRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { transport, rateLimit, signedIn, actorOf } = fastify.routeContext
  const { organisations, invitations } = fastify
  // Per user: each change writes and may send mail or webhooks.
  const changeLimit = limitEach(fastify, rateLimit, [perUser('org-change', rateLimit)])

  fastify.post('/', {
    schema: {
      summary: 'Create an organisation; the caller is its owner',
      description: 'The slug is derived from the name when absent (with a random suffix when that one is taken); a slug given that another organisation has is 409 SLUG_TAKEN.',
      security: transport.security.access,
      body: CreateOrgBody,
      response: { 201: CreatedOrgView, ...errorResponses(400, 401, 409, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: changeLimit
  }, async (request, reply) => {
    const created = await organisations.create(await actorOf(request), request.body)
    return reply.code(201).send(presentWithDate(created))
  })

  fastify.get('/', {
    schema: {
      summary: 'The caller\'s organisations, with its role in each',
      security: transport.security.access,
      response: { 200: OrgsResponse, ...errorResponses(401, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => ({ orgs: (await organisations.list(claimsOf(request).userId)).map(presentMembership) }))

  fastify.get('/:orgId', {
    schema: {
      summary: 'An organisation, with the caller\'s role',
      description: NOT_A_MEMBER,
      security: transport.security.access,
      params: OrgParams,
      response: { 200: CreatedOrgView, ...errorResponses(400, 401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => presentWithDate(await organisations.find(claimsOf(request).userId, request.params.orgId)))

  fastify.patch('/:orgId', {
    schema: {
      summary: 'Rename an organisation or change its slug (owner, admin)',
      description: `${NOT_A_MEMBER} A member: 403 ORG_FORBIDDEN. A slug another organisation has: 409 SLUG_TAKEN.`,
      security: transport.security.access,
      params: OrgParams,
      body: UpdateOrgBody,
      response: { 200: CreatedOrgView, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: changeLimit
  }, async (request) => presentWithDate(await organisations.update(await actorOf(request), request.params.orgId, request.body)))

  fastify.delete('/:orgId', {
    schema: {
      summary: 'Delete an organisation with its memberships and invitations (owner, fresh session)',
      description: `${NOT_A_MEMBER} An admin or member: 403 ORG_FORBIDDEN. A session whose last proof is older than REAUTH_MAX_AGE: ` +
        '403 REAUTHENTICATION_REQUIRED (POST /auth/reauthenticate first).',
      security: transport.security.access,
      params: OrgParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: changeLimit
  }, async (request, reply) => {
    await organisations.delete(await actorOf(request), request.params.orgId)
    return reply.code(204).send(null)
  })

  fastify.get('/:orgId/members', {
    schema: {
      summary: 'The members of an organisation, with their roles',
      description: NOT_A_MEMBER,
      security: transport.security.access,
      params: OrgParams,
      response: { 200: MembersResponse, ...errorResponses(400, 401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => ({ members: (await organisations.members(claimsOf(request).userId, request.params.orgId)).map(presentMember) }))

  fastify.patch('/:orgId/members/:userId', {
    schema: {
      summary: 'Give a member another role (owner, admin; only an owner gives or takes the owner role)',
      description: `${NOT_A_MEMBER} Acting above one's role: 403 ORG_FORBIDDEN. Taking the role of the only owner: 409 LAST_OWNER.`,
      security: transport.security.access,
      params: MemberParams,
      body: ChangeRoleBody,
      response: { 200: MemberView, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: changeLimit
  }, async (request) => {
    const { orgId, userId } = request.params
    return presentMember(await organisations.changeRole(await actorOf(request), orgId, userId, request.body.role))
  })

  fastify.delete('/:orgId/members/:userId', {
    schema: {
      summary: 'Remove a member (owner, admin), or leave (any member, its own id)',
      description: `${NOT_A_MEMBER} Acting above one's role: 403 ORG_FORBIDDEN. The only owner: 409 LAST_OWNER.`,
      security: transport.security.access,
      params: MemberParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: changeLimit
  }, async (request, reply) => {
    await organisations.removeMember(await actorOf(request), request.params.orgId, request.params.userId)
    return reply.code(204).send(null)
  })

  fastify.post('/:orgId/invitations', {
    schema: {
      summary: 'Invite an address with a role (owner, admin; only an owner invites an owner)',
      description: `${NOT_A_MEMBER} A mail carries \`\${PUBLIC_URL}/invitations#token=…\` (7 days, single use): ` +
        'the account of that address accepts it (POST /invitations/accept). A member, or an admin inviting an owner: 403 ORG_FORBIDDEN.',
      security: transport.security.access,
      params: OrgParams,
      body: InviteBody,
      response: { 201: InvitationView, ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    // Each invitation mails an address the caller chose: per user, as the other changes, and apart from them.
    preHandler: limitEach(fastify, rateLimit, [perUser('org-invite', rateLimit)])
  }, async (request, reply) => {
    const invitation = await invitations.invite(await actorOf(request), request.params.orgId, request.body)
    return reply.code(201).send(presentInvitation(invitation))
  })

  fastify.get('/:orgId/invitations', {
    schema: {
      summary: 'The pending invitations (owner, admin)',
      description: `${NOT_A_MEMBER} A member: 403 ORG_FORBIDDEN.`,
      security: transport.security.access,
      params: OrgParams,
      response: { 200: InvitationsResponse, ...errorResponses(400, 401, 403, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => ({ invitations: (await invitations.list(claimsOf(request).userId, request.params.orgId)).map(presentInvitation) }))

  fastify.delete('/:orgId/invitations/:id', {
    schema: {
      summary: 'Withdraw a pending invitation (owner, admin): its link no longer works',
      description: `${NOT_A_MEMBER} A member: 403 ORG_FORBIDDEN. No pending invitation by that id: 404 INVITATION_NOT_FOUND.`,
      security: transport.security.access,
      params: InvitationParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: changeLimit
  }, async (request, reply) => {
    await invitations.withdraw(await actorOf(request), request.params.orgId, request.params.id)
    return reply.code(204).send(null)
  })
}

export default orgRoutes

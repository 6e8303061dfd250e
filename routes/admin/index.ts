import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyRequest, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify'
import type { Config, Variant } from '../../core/config.js'
import {
  AdminEventsQuery, AdminEventsResponse, AdminUserDetails, AdminUserParams, AdminUsersQuery, AdminUsersResponse, AdminUser,
  NewAdminUserBody, presentAdminEvent, presentAdminUser, presentAdminUserDetails
} from '../../core/schemas/admin.js'
import { MAX_ID } from '../../core/schemas/common.js'
import { ValidationFailedError } from '../../core/errors.js'
import { errorResponses } from '../../core/schemas/errors.js'
import type { AdminActor } from '../../core/admin/admin.js'
import { createAdminOrganisations } from '../../core/admin/organisations.js'
import {
  AdminOrgDetails, AdminOrgParams, AdminOrgsQuery, AdminOrgsResponse, presentAdminOrg, presentAdminOrgDetails
} from '../../core/schemas/admin-organisations.js'
import { clientOf } from '../client.js'
import { mountRouteContext } from '../context.js'
import { claimsOf, signedInUser } from '../guards.js'
import { limitEach, perUser } from '../rate-limits.js'
import importRoutes from './import.js'

export interface AdminRoutesOptions {
  config: Config
  /** The variant whose access token the admin API takes: the pages' API mount's (routes/pages pageLayout). */
  variant: Variant
  apiPrefix: string
}

/** The admin API's security schemes (plugins/external/swagger.ts), by the variant whose token it takes. */
const ADMIN_SECURITY: Record<Variant, Array<Record<string, string[]>>> = {
  header: [{ adminBearerAuth: [] }],
  cookie: [{ adminAccessTokenCookie: [] }]
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The admin of an /admin request, set by the admin guard. */
    adminActor: AdminActor | null
  }
}

/**
 * The admin API (issue 22), mounted once at /admin whatever the variants: it takes the service's access
 * token as the pages' API mount carries it (Authorization in the header variant, the access cookie in the
 * cookie variant). Every route: 401 without a session, 403 FORBIDDEN to a non-admin, 403
 * MFA_ENROLLMENT_REQUIRED to an admin without a second factor and 403 SECOND_FACTOR_REQUIRED to a session that
 * did not use one, while ADMIN_REQUIRE_MFA is on; a change
 * (POST, DELETE) 403 REAUTHENTICATION_REQUIRED unless the session is fresh (REAUTH_MAX_AGE).
 */
const adminRoutes: FastifyPluginAsyncTypebox<AdminRoutesOptions> = async (fastify, { config, variant, apiPrefix }) => {
  // The route context and hooks of the mount whose token it takes (routes/context.ts): no answer is cached,
  // the cookie variant refuses cross-site changes, a new user's fields are normalised.
  const { signedIn, rateLimit } = mountRouteContext(fastify, { variant, prefix: apiPrefix, config })
  fastify.decorateRequest('adminActor', null)
  const { admin, store } = fastify
  const security = ADMIN_SECURITY[variant]

  fastify.addHook('onRoute', (route) => { route.schema = { ...route.schema, tags: ['admin'], security } })
  // In onRequest, before the body is judged: a non-admin learns nothing of the routes' input rules.
  const isAdmin: onRequestAsyncHookHandler = async (request) => {
    const user = await signedInUser(store, request)
    const { sessionId } = claimsOf(request)
    const change = request.method !== 'GET' && request.method !== 'HEAD'
    await admin.authorize(user, sessionId, { change })
    request.adminActor = { adminId: user.id, client: clientOf(request) }
  }
  /** The admin guard, every route's `onRequest` option: a signed-in session, of an admin (with its second factor, fresh for a change). */
  const adminOnly: onRequestHookHandler[] = [signedIn, isAdmin]

  const actorOf = (request: FastifyRequest): AdminActor => {
    if (request.adminActor === null) throw new Error('route is missing the admin guard')
    return request.adminActor
  }
  const changeLimit = (name: string) => limitEach(fastify, rateLimit, [perUser(`admin-${name}`, rateLimit)])
  const refusals = [401, 403, 500, 503] as const

  const api = fastify.withTypeProvider<TypeBoxTypeProvider>()

  api.get('/users', {
    schema: {
      summary: 'Search and page the users',
      description: '`query` matches email, first and last name and username, ignoring case; users come in id order, `limit` at a time; ' +
        'pass `next_cursor` as `cursor` for the next page (null on the last).',
      querystring: AdminUsersQuery,
      response: { 200: AdminUsersResponse, ...errorResponses(400, ...refusals) }
    },
    onRequest: adminOnly
  }, async (request) => {
    const { query, limit, cursor } = request.query
    const afterId = cursor === undefined ? undefined : Number(cursor)
    if (afterId !== undefined && afterId > MAX_ID) throw new ValidationFailedError(`querystring/cursor must be at most ${MAX_ID}`)
    const page = await admin.searchUsers({ query: query?.trim(), limit, afterId })
    return { users: page.users.map(presentAdminUser), next_cursor: page.nextAfterId === null ? null : String(page.nextAfterId) }
  })

  api.get('/users/:id', {
    schema: {
      summary: 'One user, with its live sessions, identities and second factors',
      params: AdminUserParams,
      response: { 200: AdminUserDetails, ...errorResponses(400, ...refusals, 404) }
    },
    onRequest: adminOnly
  }, async (request) => presentAdminUserDetails(await admin.userDetails(request.params.id)))

  const organisations = createAdminOrganisations(store)

  api.get('/orgs', {
    schema: {
      summary: 'Search and page the organisations',
      description: '`query` matches the name and the slug, ignoring case; organisations come in id order, `limit` at a time; ' +
        'pass `next_cursor` as `cursor` for the next page (null on the last).',
      querystring: AdminOrgsQuery,
      response: { 200: AdminOrgsResponse, ...errorResponses(400, ...refusals) }
    },
    onRequest: adminOnly
  }, async (request) => {
    const { query, limit, cursor } = request.query
    const afterId = cursor === undefined ? undefined : Number(cursor)
    if (afterId !== undefined && afterId > MAX_ID) throw new ValidationFailedError(`querystring/cursor must be at most ${MAX_ID}`)
    const page = await organisations.search({ query: query?.trim(), limit, afterId })
    return { orgs: page.orgs.map(presentAdminOrg), next_cursor: page.nextAfterId === null ? null : String(page.nextAfterId) }
  })

  api.get('/orgs/:orgId', {
    schema: {
      summary: 'One organisation, with its members',
      params: AdminOrgParams,
      response: { 200: AdminOrgDetails, ...errorResponses(400, ...refusals, 404) }
    },
    onRequest: adminOnly
  }, async (request) => {
    const { org, members } = await organisations.details(request.params.orgId)
    return presentAdminOrgDetails(org, members)
  })

  api.post('/users', {
    schema: {
      summary: 'Create a user (no password), optionally mailing an invitation with a set-password link',
      description: 'The account has no password until the link (a password-reset token, PASSWORD_RESET_TTL) is used at /reset-password. ' +
        (variant === 'cookie' ? '`username` is required (the cookie variant\'s users have one). ' : '') + '409 EMAIL_TAKEN or USERNAME_TAKEN.',
      body: NewAdminUserBody[variant],
      response: { 201: AdminUser, ...errorResponses(400, ...refusals, 409, 413, 415, 429) }
    },
    onRequest: adminOnly,
    preHandler: changeLimit('create')
  }, async (request, reply) => {
    const { body } = request
    // The cookie variant's body has a username (its schema requires it), the header variant's none.
    const username = 'username' in body ? body.username : null
    const user = await admin.createUser(actorOf(request), {
      firstName: body.first_name, lastName: body.last_name, email: body.email, username, role: body.role, invite: body.invite
    })
    return reply.code(201).send(presentAdminUser(user))
  })

  const NOT_AN_ADMIN = '409 TARGET_IS_ADMIN for another admin (the operator demotes it first: `users set-role <id> user`). '
  const LAST_ADMIN = '409 LAST_ADMIN for the admin itself when it is the last enabled one.'
  const change = (url: string, method: 'POST' | 'DELETE', name: string, summary: string, description: string,
    act: (actor: AdminActor, userId: number) => Promise<void>) => {
    api.route({
      method,
      url,
      schema: { summary, description, params: AdminUserParams, response: { 204: { type: 'null', description: 'Done' }, ...errorResponses(400, ...refusals, 404, 409, 429) } },
      onRequest: adminOnly,
      preHandler: changeLimit(name),
      handler: async (request, reply) => {
        await act(actorOf(request), request.params.id)
        return reply.code(204).send()
      }
    })
  }
  change('/users/:id/disable', 'POST', 'disable', 'Disable a user',
    'Every session of the user ends at once (its access tokens are refused within the revocation bound on every instance); ' +
    'login, refresh and provider sign-in answer 403 ACCOUNT_DISABLED until it is enabled. Recorded as account_disabled. ' + NOT_AN_ADMIN + LAST_ADMIN,
    async (actor, id) => { await admin.disable(actor, id) })
  change('/users/:id/enable', 'POST', 'enable', 'Enable a disabled user', 'Sessions ended by disabling stay ended. Recorded as account_enabled.',
    async (actor, id) => { await admin.enable(actor, id) })
  change('/users/:id/sessions', 'DELETE', 'sessions', 'End every session of a user', 'Apps\' grants too. Recorded as admin_sessions_revoked. ' + NOT_AN_ADMIN,
    async (actor, id) => { await admin.endSessions(actor, id) })
  change('/users/:id/mfa', 'DELETE', 'mfa', 'Reset a user\'s second factor',
    'As the CLI\'s `mfa reset`: TOTP off, recovery codes and pending second steps void (passkeys stay); the owner is mailed. ' +
    'Recorded as admin_mfa_reset. ' + NOT_AN_ADMIN,
    async (actor, id) => { await admin.resetMfa(actor, id) })
  change('/users/:id', 'DELETE', 'delete', 'Delete a user',
    'The user, its sessions, tokens and own events go. Recorded as admin_user_deleted with user_id null and the id in detail. ' + NOT_AN_ADMIN + LAST_ADMIN,
    async (actor, id) => { await admin.deleteUser(actor, id) })

  // POST /admin/users/import (routes/admin/import.ts), behind the same guards: an admin with a fresh session.
  await fastify.register(importRoutes, { onRequest: adminOnly })

  api.get('/events', {
    schema: {
      summary: 'The audit trail: every user\'s security events and every admin action',
      description: 'Newest first, filtered by `user` and `type`; `actor_id` is the admin who acted. Pass the last id as `before` for the next page.',
      querystring: AdminEventsQuery,
      response: { 200: AdminEventsResponse, ...errorResponses(400, ...refusals) }
    },
    onRequest: adminOnly
  }, async (request) => {
    const { user, type, before, limit } = request.query
    const events = await admin.events({ userId: user, type, beforeId: before, limit })
    return { events: events.map(presentAdminEvent) }
  })
}

export default adminRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AccountResponse, ReauthenticateBody, SessionParams, SessionsResponse, presentAccount, presentSession } from '../../core/schemas/account.js'
import { isGrantSession } from '../../core/oauth/grant-sessions.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { SecurityEventsQuery, SecurityEventsResponse, presentSecurityEvent } from '../../core/schemas/security-events.js'
import { clientOf } from '../client.js'
import { claimsOf, signedInUser } from '../guards.js'
import { limitEach, perUser } from '../rate-limits.js'

/** What the signed-in user sees of its own account, sessions and security events, and re-authentication. */
const accountRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { variant, transport, rateLimit, signedIn } = fastify.routeContext
  const { store, sessions, authentication, securityEvents, mfa } = fastify
  // Every route here is the signed-in user's own: each is guarded, and the OpenAPI document says so.
  const security = transport.security.access

  fastify.get('/account', {
    schema: {
      security,
      summary: 'The signed-in user, with whether its email is verified, when it registered, and its second factors',
      response: { 200: AccountResponse[variant], ...errorResponses(401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => {
    const user = await signedInUser(store, request)
    return presentAccount(user, variant, await mfa.status(user.id))
  })

  fastify.get('/sessions', {
    schema: {
      security,
      summary: 'The signed-in user\'s live sessions, newest first; `current` marks the one asking',
      response: { 200: SessionsResponse, ...errorResponses(401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => {
    const claims = claimsOf(request)
    const live = await store.listLiveSessions(claims.userId, new Date(request.server.clock.now()))
    // An app's grant is a session too (core/oauth/grant-sessions.ts); GET /auth/apps lists those.
    return live.filter(session => !isGrantSession(session.id)).map(session => presentSession(session, claims.sessionId))
  })

  fastify.delete('/sessions/:sessionId', {
    schema: {
      security,
      summary: 'End one of one\'s own sessions (its refresh and access tokens stop working at once)',
      params: SessionParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request, reply) => {
    const claims = claimsOf(request)
    await sessions.endOne(claims.userId, request.params.sessionId, clientOf(request))
    if (request.params.sessionId === claims.sessionId) transport.clear(reply)
    return reply.code(204).send(null)
  })

  fastify.post('/reauthenticate', {
    schema: {
      security,
      summary: 'Confirm the password or a mailed code (and, with TOTP, a code): the session may make sensitive changes for REAUTH_MAX_AGE',
      description: 'Send `password`, or `email_code`: a code POST /auth/email-code mailed to the account\'s address (any account, ' +
        'one without a password included; 401 INVALID_CODE when wrong, five wrong tries burn it); both or neither is 400. ' +
        'A wrong password is 401 INVALID_CREDENTIALS and counts toward the account lockout, as a failed login does. ' +
        'An account with TOTP also sends `code` (a current TOTP code or a recovery code), as a login needs both: without it ' +
        '403 MFA_REQUIRED (no mfa_token: send the code here), a wrong or used one 401 INVALID_MFA_CODE (counted as well). ' +
        'A passkey re-authenticates through POST /auth/passkeys/reauthenticate; a sign-in (password, passkey, provider, mailed code) ' +
        'makes the new session fresh too.',
      body: ReauthenticateBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('reauthenticate', rateLimit)])
  }, async (request, reply) => {
    const user = await signedInUser(store, request)
    const { password, email_code: emailCode, code } = request.body
    await authentication.reauthenticate(user, { password, emailCode, code }, clientOf(request), claimsOf(request).sessionId)
    return reply.code(204).send(null)
  })

  fastify.get('/security-events', {
    schema: {
      security,
      summary: 'The signed-in user\'s security events (logins, failures, lockouts, changes), newest first',
      description: 'Paged: pass the `id` of the last event of a page as `before` for the next one.',
      querystring: SecurityEventsQuery,
      response: { 200: SecurityEventsResponse, ...errorResponses(400, 401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => {
    const events = await securityEvents.list(claimsOf(request).userId, { limit: request.query.limit, beforeId: request.query.before })
    return { events: events.map(presentSecurityEvent) }
  })
}

export default accountRoutes

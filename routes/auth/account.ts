import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Variant } from '../../src/config.js'
import { SessionNotFoundError } from '../../src/errors.js'
import { AccountResponse, SessionParams, SessionsResponse, presentAccount, presentSession } from '../../src/schemas/account.js'
import { errorResponses } from '../../src/schemas/errors.js'
import { claimsOf, requireAccessToken, signedInUser } from '../guards.js'
import type { TokenTransport } from '../transport.js'

export interface AccountRoutesOptions {
  variant: Variant
  transport: TokenTransport
}

/** What the signed-in user sees of its own account and sessions. */
const accountRoutes: FastifyPluginAsyncTypebox<AccountRoutesOptions> = async (fastify, { variant, transport }) => {
  const { store } = fastify
  fastify.addHook('onRequest', requireAccessToken(transport, fastify.accessTokens, store))

  fastify.get('/account', {
    schema: {
      summary: 'The signed-in user, with whether its email is verified and when it registered',
      response: { 200: AccountResponse[variant], ...errorResponses(401, 404, 500, 503) }
    }
  }, async (request) => {
    const user = await signedInUser(store, request)
    return presentAccount(user, variant)
  })

  fastify.get('/sessions', {
    schema: {
      summary: 'The signed-in user\'s live sessions, newest first; `current` marks the one asking',
      response: { 200: SessionsResponse, ...errorResponses(401, 404, 500, 503) }
    }
  }, async (request) => {
    const claims = claimsOf(request)
    const live = await store.listLiveSessions(claims.userId, new Date())
    return live.map(session => presentSession(session, claims.sessionId))
  })

  fastify.delete('/sessions/:sessionId', {
    schema: {
      summary: 'End one of one\'s own sessions (its refresh and access tokens stop working at once)',
      params: SessionParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 500, 503) }
    }
  }, async (request, reply) => {
    const claims = claimsOf(request)
    const session = await store.findSession(request.params.sessionId)
    // Another user's session is as unknown as one that never was.
    if (session === undefined || session.userId !== claims.userId) throw new SessionNotFoundError()
    await store.revokeFamily(session.id, new Date())
    if (session.id === claims.sessionId) transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default accountRoutes

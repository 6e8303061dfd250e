import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { DeleteUserBody } from '../../core/schemas/account.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { PublicUser, UpdateUserBody, UserParams, presentUser } from '../../core/schemas/users.js'
import { UserNotFoundError } from '../../core/errors.js'
import { claimsOf, requireSelf } from '../guards.js'
import { limitEach, perUser } from '../rate-limits.js'

const userRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { variant, transport, rateLimit, signedIn, actorOf } = fastify.routeContext
  const { userCache, account } = fastify

  fastify.get('/:userId', {
    schema: {
      summary: 'Read a user (only oneself)',
      security: transport.security.access,
      params: UserParams,
      response: { 200: PublicUser[variant], ...errorResponses(400, 401, 403, 404, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: requireSelf
  }, function readUser (request, reply) {
    const { userId } = claimsOf(request)
    // From memory, without a promise, for a user read before (core/users/user-cache.ts): no store read.
    const known = userCache.peek(userId)
    if (known !== undefined) {
      reply.send(presentUser(known, variant))
      return
    }
    return userCache.find(userId).then((user) => {
      if (user === undefined) throw new UserNotFoundError()
      return presentUser(user, variant)
    })
  })

  if (variant === 'cookie') {
    fastify.patch('/:userId', {
      schema: {
        summary: 'Update some of a user\'s fields (only oneself)',
        description: 'A new email needs a recent password proof (403 REAUTHENTICATION_REQUIRED past REAUTH_MAX_AGE: POST /auth/reauthenticate first). ' +
          'The previous address is then told, every mailed link is voided, and every session ends; the answer carries the cookies of a new one.',
        security: transport.security.access,
        params: UserParams,
        body: UpdateUserBody,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 500, 503) }
      },
      // Per user: a 409 EMAIL_TAKEN tells whether an address has an account, so it must not be asked at will.
      onRequest: signedIn,
      preHandler: [requireSelf, ...limitEach(fastify, rateLimit, [perUser('update-user', rateLimit)])]
    }, async (request, reply) => {
      const { first_name: firstName, last_name: lastName, username, email } = request.body
      const { session } = await account.updateProfile(await actorOf(request), { firstName, lastName, username, email })
      if (session !== undefined) transport.deliver(reply, session)
      return reply.code(204).send(null)
    })
  }

  fastify.delete('/:userId', {
    schema: {
      summary: 'Delete one\'s own account, confirmed with its password; every session ends with it',
      description: 'An account with a password sends it (400 without it, 401 INVALID_CREDENTIALS when wrong). An account without one ' +
        '(made by a provider sign-in, or passkey only) sends `{}` and needs a fresh session: a sign-in or re-authentication within ' +
        'REAUTH_MAX_AGE (403 REAUTHENTICATION_REQUIRED otherwise: sign in again, or POST /auth/passkeys/reauthenticate).',
      security: transport.security.access,
      params: UserParams,
      body: DeleteUserBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: [requireSelf, ...limitEach(fastify, rateLimit, [perUser('delete-user', rateLimit)])]
  }, async (request, reply) => {
    await account.deleteAccount(await actorOf(request), request.body.password)
    transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default userRoutes

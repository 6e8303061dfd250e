import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Variant } from '../../src/config.js'
import { UserNotFoundError } from '../../src/errors.js'
import { errorResponses } from '../../src/schemas/errors.js'
import { PublicUser, UpdateUserBody, UserParams, presentUser } from '../../src/schemas/users.js'
import { claimsOf, requireAccessToken, requireSelf } from '../guards.js'
import type { TokenTransport } from '../transport.js'

export interface UserRoutesOptions {
  variant: Variant
  transport: TokenTransport
}

const userRoutes: FastifyPluginAsyncTypebox<UserRoutesOptions> = async (fastify, { variant, transport }) => {
  const { store } = fastify
  fastify.addHook('onRequest', requireAccessToken(transport, fastify.accessTokens))
  fastify.addHook('preHandler', requireSelf)

  fastify.get('/:userId', {
    schema: {
      summary: 'Read a user (only oneself)',
      params: UserParams,
      response: { 200: PublicUser[variant], ...errorResponses(400, 401, 403, 404, 500, 503) }
    }
  }, async (request) => {
    const user = await store.findUserById(claimsOf(request).userId)
    if (user === undefined) throw new UserNotFoundError()
    return presentUser(user, variant)
  })

  if (variant === 'cookie') {
    fastify.patch('/:userId', {
      schema: {
        summary: 'Update some of a user\'s fields (only oneself)',
        params: UserParams,
        body: UpdateUserBody,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 500, 503) }
      }
    }, async (request, reply) => {
      const { first_name: firstName, last_name: lastName, username, email } = request.body
      const updated = await store.updateUser(claimsOf(request).userId, { firstName, lastName, username, email })
      if (updated === undefined) throw new UserNotFoundError()
      return reply.code(204).send(null)
    })
  }
}

export default userRoutes

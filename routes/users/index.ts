import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Variant } from '../../src/config.js'
import { UserNotFoundError } from '../../src/errors.js'
import { DeleteUserBody } from '../../src/schemas/account.js'
import { errorResponses } from '../../src/schemas/errors.js'
import { PublicUser, UpdateUserBody, UserParams, presentUser } from '../../src/schemas/users.js'
import { confirmPassword } from '../confirm-password.js'
import { sessionClient } from '../client.js'
import { claimsOf, requireAccessToken, requireSelf, signedInUser } from '../guards.js'
import type { TokenTransport } from '../transport.js'

export interface UserRoutesOptions {
  variant: Variant
  transport: TokenTransport
}

const userRoutes: FastifyPluginAsyncTypebox<UserRoutesOptions> = async (fastify, { variant, transport }) => {
  const { store, sessions, account } = fastify
  fastify.addHook('onRequest', requireAccessToken(transport, fastify.accessTokens, store))
  fastify.addHook('preHandler', requireSelf)

  fastify.get('/:userId', {
    schema: {
      summary: 'Read a user (only oneself)',
      params: UserParams,
      response: { 200: PublicUser[variant], ...errorResponses(400, 401, 403, 404, 500, 503) }
    }
  }, async (request) => {
    const user = await signedInUser(store, request)
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
      const { userId } = claimsOf(request)
      const current = await signedInUser(store, request)
      // A new address is unverified until a link mailed to it is followed.
      const emailChanges = email !== undefined && email !== current.email
      const verification = emailChanges ? { emailVerified: false, emailVerifiedAt: null } : {}
      const updated = await store.updateUser(userId, { firstName, lastName, username, email, ...verification })
      if (updated === undefined) throw new UserNotFoundError()
      if (emailChanges) {
        account.sendVerificationMail(updated)
        // The email is how an account is recovered: whoever held a session before the change loses it
        // (OWASP ASVS 3.3.3). The user who made the change goes on in a new session.
        await sessions.endAll(userId)
        transport.deliver(reply, await sessions.start(userId, sessionClient(request)))
      }
      return reply.code(204).send(null)
    })
  }

  fastify.delete('/:userId', {
    schema: {
      summary: 'Delete one\'s own account, confirmed with its password; every session ends with it',
      params: UserParams,
      body: DeleteUserBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const user = await signedInUser(store, request)
    await confirmPassword(fastify, request, reply, user, request.body.password)
    // Its refresh tokens, sessions and mailed tokens go with it (ON DELETE CASCADE): its access tokens find no session.
    await store.deleteUser(user.id)
    transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default userRoutes

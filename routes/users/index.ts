import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Variant } from '../../src/config.js'
import { InvalidCredentialsError, RateLimitedError, UserNotFoundError } from '../../src/errors.js'
import { DeleteUserBody } from '../../src/schemas/account.js'
import { errorResponses } from '../../src/schemas/errors.js'
import { PublicUser, UpdateUserBody, UserParams, presentUser } from '../../src/schemas/users.js'
import { claimsOf, requireAccessToken, requireSelf } from '../guards.js'
import type { TokenTransport } from '../transport.js'

export interface UserRoutesOptions {
  variant: Variant
  transport: TokenTransport
}

const userRoutes: FastifyPluginAsyncTypebox<UserRoutesOptions> = async (fastify, { variant, transport }) => {
  const { store, passwords, loginThrottle, account } = fastify
  fastify.addHook('onRequest', requireAccessToken(transport, fastify.accessTokens, store))
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
      const userId = claimsOf(request).userId
      const current = await store.findUserById(userId)
      if (current === undefined) throw new UserNotFoundError()
      // A new address is unverified until a link mailed to it is followed.
      const emailChanges = email !== undefined && email !== current.email
      const verification = emailChanges ? { emailVerified: false, emailVerifiedAt: null } : {}
      const updated = await store.updateUser(userId, { firstName, lastName, username, email, ...verification })
      if (updated === undefined) throw new UserNotFoundError()
      if (emailChanges) account.sendVerificationMail(updated)
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
    const user = await store.findUserById(claimsOf(request).userId)
    if (user === undefined) throw new UserNotFoundError()
    // Wrong passwords count with failed logins: a stolen access token cannot guess its way to deleting the account.
    const throttleKey = `${request.ip}|${user.email}`
    const retryAfter = loginThrottle.retryAfterSeconds(throttleKey)
    if (retryAfter > 0) {
      reply.header('retry-after', String(retryAfter))
      throw new RateLimitedError(retryAfter)
    }
    if (!await passwords.verify(user.passwordHash, request.body.password)) {
      loginThrottle.recordFailure(throttleKey)
      throw new InvalidCredentialsError()
    }
    // Its refresh tokens, sessions and mailed tokens go with it (ON DELETE CASCADE): its access tokens find no session.
    await store.deleteUser(user.id)
    transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default userRoutes

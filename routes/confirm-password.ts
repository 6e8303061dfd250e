import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { UserRecord } from '../db/store.js'
import { InvalidCredentialsError, RateLimitedError } from '../src/errors.js'

/**
 * Checks the password a signed-in user types to confirm a change (new
 * password, account deletion): 401 INVALID_CREDENTIALS when wrong. Wrong
 * passwords count with the account's failed logins (same lockout), so a stolen
 * access token cannot guess its way to taking the account over.
 */
export async function confirmPassword (fastify: FastifyInstance, request: FastifyRequest, reply: FastifyReply, user: UserRecord, password: string): Promise<void> {
  await refuseWhileLocked(fastify, reply, user.email)
  if (!await fastify.passwords.verify(user.passwordHash, password)) {
    await fastify.loginThrottle.recordFailure(user.email)
    throw new InvalidCredentialsError()
  }
}

/** 429 with Retry-After while the account is locked after failed logins (a check costs no attempt). */
export async function refuseWhileLocked (fastify: FastifyInstance, reply: FastifyReply, email: string): Promise<void> {
  const retryAfter = await fastify.loginThrottle.retryAfterSeconds(email)
  if (retryAfter > 0) {
    reply.header('retry-after', String(retryAfter))
    throw new RateLimitedError(retryAfter)
  }
}

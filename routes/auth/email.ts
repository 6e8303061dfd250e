import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AcceptedResponse, VerifyEmailBody } from '../../core/schemas/account.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { clientOf } from '../client.js'
import { claimsOf, signedInUser } from '../guards.js'
import { limitEach, perAddress } from '../rate-limits.js'
import { NO_CREDENTIALS } from '../transport.js'

/** Email verification: the link mailed at registration and at an email change, and asking for a new one. */
const emailRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { transport, rateLimit, signedIn } = fastify.routeContext
  const { store, account } = fastify

  fastify.post('/verify-email', {
    schema: {
      summary: 'Mark the email verified with the token of a verification link',
      description: 'On an account whose address was never verified, whatever was set up before the proof (passkeys, TOTP and ' +
        'recovery codes, linked providers) is removed, and when anything was, every session ends: whoever registered the address may not own it. The password stays.',
      security: NO_CREDENTIALS,
      body: VerifyEmailBody,
      response: { 204: Type.Null(), ...errorResponses(400, 403, 413, 415, 500, 503) }
    }
  }, async (request, reply) => {
    await account.verifyEmail(request.body.token, clientOf(request))
    return reply.code(204).send(null)
  })

  fastify.post('/resend-verification', {
    schema: {
      summary: 'Mail a new verification link (nothing is sent when the email is already verified)',
      security: transport.security.access,
      response: { 202: AcceptedResponse, ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [
      perAddress('resend-verification', rateLimit.recoveryMax),
      { name: 'resend-verification:account', max: rateLimit.recoveryAccountMax, key: (request) => String(claimsOf(request).userId) }
    ])
  }, async (request, reply) => {
    const user = await signedInUser(store, request)
    if (!user.emailVerified) account.sendVerificationMail(user)
    return reply.code(202).send({ message: user.emailVerified ? 'The email address is already verified' : 'A verification link is on its way' })
  })
}

export default emailRoutes

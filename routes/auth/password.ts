import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { AccessTokenClaims } from '../../plugins/app/tokens.js'
import type { Config } from '../../src/config.js'
import { AcceptedResponse, ChangePasswordBody, ForgotPasswordBody, ResetPasswordBody } from '../../src/schemas/account.js'
import { errorResponses } from '../../src/schemas/errors.js'
import { hashOneTimeToken } from '../../src/tokens/one-time-token.js'
import { hashRefreshToken } from '../../src/tokens/refresh-token.js'
import { confirmPassword } from '../confirm-password.js'
import { claimsOf, requireAccessToken, signedInUser } from '../guards.js'
import { limitEach } from '../rate-limits.js'
import type { TokenTransport } from '../transport.js'

export interface PasswordRoutesOptions {
  transport: TokenTransport
  rateLimit: Config['rateLimit']
}

/** The one answer of forgot-password, for a known, an unknown and a rate-limited-but-unknown address alike. */
export const FORGOT_PASSWORD_ANSWER = { message: 'If that address belongs to an account, a link to reset its password is on its way' }

/** Change the password (signed in), or reset a forgotten one through a mailed link. */
const passwordRoutes: FastifyPluginAsyncTypebox<PasswordRoutesOptions> = async (fastify, { transport, rateLimit }) => {
  const { store, sessions, accessTokens, account } = fastify
  const clientAddress = (request: FastifyRequest) => request.ip

  /** Cookie variant: the current session gets new cookies (a rotated refresh token when the client sent its own). */
  async function renewCurrentSession (request: FastifyRequest, claims: AccessTokenClaims) {
    const refreshToken = transport.readRefreshToken(request)
    if (refreshToken !== undefined) {
      const record = await store.findRefreshToken(hashRefreshToken(refreshToken))
      if (record?.familyId === claims.sessionId) return await sessions.refresh(refreshToken, { rotate: true, expectedUserId: claims.userId })
    }
    return { ...claims, accessToken: accessTokens.sign(claims) }
  }

  fastify.post('/change-password', {
    schema: {
      summary: 'Change the password; every other session of the user is revoked',
      body: ChangePasswordBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    },
    onRequest: requireAccessToken(transport, accessTokens, store)
  }, async (request, reply) => {
    const claims = claimsOf(request)
    const user = await signedInUser(store, request)
    await confirmPassword(fastify, request, reply, user, request.body.current_password)
    const passwordHash = await account.acceptNewPassword(request.body.new_password)
    const now = new Date()
    await store.setPasswordHash(user.id, passwordHash, now)
    await store.revokeUserSessions(user.id, now, { exceptFamilyId: claims.sessionId })
    if (transport.refreshPolicy.rotate) transport.deliver(reply, await renewCurrentSession(request, claims))
    return reply.code(204).send(null)
  })

  fastify.post('/forgot-password', {
    schema: {
      summary: 'Mail a password-reset link; the same 202 whether or not the address is known',
      body: ForgotPasswordBody,
      response: { 202: AcceptedResponse, ...errorResponses(400, 403, 413, 415, 429, 500, 503) }
    },
    // Per address typed, known or not, so a limited known account answers as a limited unknown one.
    preHandler: limitEach(fastify, rateLimit, [
      { name: 'forgot-password:ip', max: rateLimit.recoveryMax, key: clientAddress },
      { name: 'forgot-password:account', max: rateLimit.recoveryAccountMax, key: (request) => (request.body as { email: string }).email }
    ])
  }, async (request, reply) => {
    // The lookup, the token and the mail all happen after the answer: known and unknown take the same time.
    account.sendPasswordResetMail(request.body.email)
    return reply.code(202).send(FORGOT_PASSWORD_ANSWER)
  })

  fastify.post('/reset-password', {
    schema: {
      summary: 'Set a new password with the token of a reset link; every session of the user is revoked',
      body: ResetPasswordBody,
      response: { 204: Type.Null(), ...errorResponses(400, 403, 413, 415, 429, 500, 503) }
    },
    preHandler: limitEach(fastify, rateLimit, [
      { name: 'reset-password:ip', max: rateLimit.recoveryMax, key: clientAddress },
      // The token stands for its account here: the account is known only once the token is.
      { name: 'reset-password:account', max: rateLimit.recoveryAccountMax, key: (request) => hashOneTimeToken((request.body as { token: string }).token) }
    ])
  }, async (request, reply) => {
    await account.resetPassword(request.body.token, request.body.new_password)
    transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default passwordRoutes

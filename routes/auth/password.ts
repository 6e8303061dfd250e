import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AcceptedResponse, ChangePasswordBody, ForgotPasswordBody, ResetPasswordBody } from '../../core/schemas/account.js'
import { SetPasswordBody } from '../../core/schemas/email-code.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { hashToken } from '../../core/tokens/random-token.js'
import { clientOf } from '../client.js'
import { claimsOf, signedInUser } from '../guards.js'
import { limitEach, perAddress, perUser, type WithBody } from '../rate-limits.js'
import { NO_CREDENTIALS } from '../transport.js'

/** The one answer of forgot-password, for a known, an unknown and a rate-limited-but-unknown address alike. */
export const FORGOT_PASSWORD_ANSWER = { message: 'If that address belongs to an account, a link to reset its password is on its way' }

/** Change the password (signed in), set the first one of an account without, or reset a forgotten one through a mailed link. */
const passwordRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { transport, rateLimit, signedIn } = fastify.routeContext
  const { store, sessions, account } = fastify

  fastify.post('/change-password', {
    schema: {
      summary: 'Change the password; every other session of the user is revoked and every mailed link voided',
      security: transport.security.access,
      body: ChangePasswordBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('change-password', rateLimit)])
  }, async (request, reply) => {
    const claims = claimsOf(request)
    const client = clientOf(request)
    const actor = { user: await signedInUser(store, request), sessionId: claims.sessionId, client }
    await account.changePassword(actor, request.body.current_password, request.body.new_password)
    // Cookie variant: the current session goes on with new cookies (a rotated refresh token when the client sent its own).
    if (transport.refreshPolicy.rotate) transport.deliver(reply, await sessions.renew(claims, transport.readRefreshToken(request), client))
    return reply.code(204).send(null)
  })

  fastify.post('/password', {
    schema: {
      summary: 'Set the first password of an account that has none (made by a mailed code, a provider or a passkey)',
      description: 'Needs a fresh session (a sign-in or re-authentication within REAUTH_MAX_AGE: 403 REAUTHENTICATION_REQUIRED ' +
        'otherwise). The password policy applies (400 PASSWORD_TOO_COMMON). As a password change, every other session ends and ' +
        'mailed links are void. An account that has a password gets 409 PASSWORD_ALREADY_SET: POST /auth/change-password changes it.',
      security: transport.security.access,
      body: SetPasswordBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('set-password', rateLimit)])
  }, async (request, reply) => {
    const claims = claimsOf(request)
    const client = clientOf(request)
    await account.setFirstPassword({ user: await signedInUser(store, request), sessionId: claims.sessionId, client }, request.body.password)
    // Cookie variant: the current session goes on with new cookies, as after a password change.
    if (transport.refreshPolicy.rotate) transport.deliver(reply, await sessions.renew(claims, transport.readRefreshToken(request), client))
    return reply.code(204).send(null)
  })

  fastify.post('/forgot-password', {
    schema: {
      summary: 'Mail a password-reset link; the same 202 whether or not the address is known',
      security: NO_CREDENTIALS,
      body: ForgotPasswordBody,
      response: { 202: AcceptedResponse, ...errorResponses(400, 403, 413, 415, 429, 500, 503) }
    },
    // Per address typed, known or not, so a limited known account answers as a limited unknown one.
    preHandler: limitEach<WithBody<typeof ForgotPasswordBody>>(fastify, rateLimit, [
      perAddress('forgot-password', rateLimit.recoveryMax),
      { name: 'forgot-password:account', max: rateLimit.recoveryAccountMax, key: (request) => request.body.email }
    ])
  }, async (request, reply) => {
    // The lookup, the token and the mail all happen after the answer: known and unknown take the same time.
    account.sendPasswordResetMail(request.body.email)
    return reply.code(202).send(FORGOT_PASSWORD_ANSWER)
  })

  fastify.post('/reset-password', {
    schema: {
      summary: 'Set a new password with the token of a reset link; every session of the user is revoked',
      description: 'The link proves the address. An account whose address was never verified is then verified and loses ' +
        'whatever was set up before (passkeys, TOTP and recovery codes, linked providers): its registrant may not own the address. ' +
        'An account already verified keeps its passkeys and TOTP: a reset never turns a second factor off.',
      security: NO_CREDENTIALS,
      body: ResetPasswordBody,
      response: { 204: Type.Null(), ...errorResponses(400, 403, 413, 415, 429, 500, 503) }
    },
    preHandler: limitEach<WithBody<typeof ResetPasswordBody>>(fastify, rateLimit, [
      perAddress('reset-password', rateLimit.recoveryMax),
      // The token stands for its account here: the account is known only once the token is.
      { name: 'reset-password:account', max: rateLimit.recoveryAccountMax, key: (request) => hashToken(request.body.token) }
    ])
  }, async (request, reply) => {
    await account.resetPassword(request.body.token, request.body.new_password, clientOf(request))
    transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default passwordRoutes

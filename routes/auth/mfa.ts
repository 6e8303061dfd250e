import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { LoginResponse } from '../../core/schemas/auth.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { MfaVerifyBody, RecoveryCodesResponse, TotpConfirmBody, TotpSetupResponse } from '../../core/schemas/mfa.js'
import { clientOf } from '../client.js'
import { limitEach, perAddress, perUser } from '../rate-limits.js'
import { NO_CREDENTIALS } from '../transport.js'
import { answerLogin } from './login-answer.js'

const FRESH = 'Needs a recent proof (403 REAUTHENTICATION_REQUIRED past REAUTH_MAX_AGE: POST /auth/reauthenticate with the password and, ' +
  'with TOTP, a code; or POST /auth/passkeys/reauthenticate).'

/** The second factor: TOTP setup and removal, recovery codes, and the second step of a login. */
const mfaRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { variant, transport, rateLimit, signedIn, actorOf } = fastify.routeContext
  const { mfa, authentication } = fastify

  // Setting up and removing one's own second factor: each route needs a signed-in session.
  fastify.post('/mfa/totp', {
    schema: {
      security: transport.security.access,
      summary: 'Start TOTP: a new secret and its otpauth:// URL, inactive until confirmed',
      description: `Calling it again replaces a secret not yet confirmed; 409 TOTP_ALREADY_ENABLED once one is. ${FRESH}`,
      response: { 200: TotpSetupResponse, ...errorResponses(400, 401, 403, 404, 409, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('totp-setup', rateLimit)])
  }, async (request) => {
    const { secret, otpauthUrl } = await mfa.beginTotp(await actorOf(request))
    return { secret, otpauth_url: otpauthUrl }
  })

  fastify.post('/mfa/totp/confirm', {
    schema: {
      security: transport.security.access,
      summary: 'Turn TOTP on with a current code of the new secret; answers the ten recovery codes, shown this once',
      description: 'Every other session of the user ends (as after a password change); this one goes on. ' +
        'A wrong code is 400 INVALID_MFA_CODE; 409 TOTP_SETUP_NOT_STARTED when no secret waits for confirmation.',
      body: TotpConfirmBody,
      response: { 200: RecoveryCodesResponse, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('totp-confirm', rateLimit)])
  }, async (request) => {
    return { recovery_codes: await mfa.confirmTotp(await actorOf(request), request.body.code) }
  })

  fastify.delete('/mfa/totp', {
    schema: {
      security: transport.security.access,
      summary: 'Turn TOTP off; the recovery codes go with it (idempotent)',
      description: FRESH,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('totp-delete', rateLimit)])
  }, async (request, reply) => {
    await mfa.disableTotp(await actorOf(request))
    return reply.code(204).send(null)
  })

  fastify.post('/mfa/recovery-codes', {
    schema: {
      security: transport.security.access,
      summary: 'A new set of ten recovery codes; the old set is void',
      description: `409 TOTP_NOT_ENABLED without TOTP. ${FRESH}`,
      response: { 200: RecoveryCodesResponse, ...errorResponses(400, 401, 403, 404, 409, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('recovery-codes', rateLimit)])
  }, async (request) => {
    return { recovery_codes: await mfa.renewRecoveryCodes(await actorOf(request)) }
  })

  // The account an mfa_token is for, found before the limits count the request (per account).
  const challengedUsers = new WeakMap<FastifyRequest, string>()

  fastify.post('/mfa/verify', {
    schema: {
      security: NO_CREDENTIALS,
      summary: 'The second step of a login: the mfa_token of the 403 MFA_REQUIRED answer and a TOTP or recovery code',
      description: 'Answers exactly as POST /auth/login does. 401 INVALID_MFA_CODE for a wrong, replayed or used code ' +
        '(each counts toward the account lockout, as a wrong password does); after 5 the mfa_token is void. ' +
        '401 INVALID_MFA_TOKEN for a token unknown, used, expired (MFA_TOKEN_TTL) or void (a password change or reset, ' +
        'an email change or a logout everywhere since it was handed out voids it): log in again. ' +
        '403 MFA_LOCKED after 10 wrong codes since the last right one, over every mfa_token (MFA_MAX_WRONG_CODES): every code ' +
        'is refused, the right one included, until the password is reset (POST /auth/forgot-password); the owner is mailed when it locks. ' +
        'A reset gives 3 more codes, not a fresh count; a right code clears the count.',
      body: MfaVerifyBody,
      response: { 200: LoginResponse[variant], ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503) }
    },
    preHandler: [
      async (request) => {
        const challenge = await mfa.openChallenge(request.body.mfa_token)
        if (challenge !== undefined) challengedUsers.set(request, String(challenge.userId))
      },
      // Per client address as logins are (RATE_LIMIT_LOGIN_MAX), and per account (RATE_LIMIT_ACCOUNT_MAX).
      ...limitEach(fastify, rateLimit, [
        perAddress('mfa-verify', rateLimit.loginMax),
        { name: 'mfa-verify:account', max: rateLimit.accountMax, key: (request) => challengedUsers.get(request) }
      ])
    ],
    // The second step completes a login: its 200 and 401 count as one.
    config: { metric: 'login' }
  }, async (request, reply) => {
    return answerLogin(reply, transport, variant, await authentication.completeMfaLogin(request.body.mfa_token, request.body.code, clientOf(request)))
  })
}

export default mfaRoutes

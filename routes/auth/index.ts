import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { MissingTokenError } from '../../core/errors.js'
import { AccessTokenResponse, LoginBody, LoginResponse, RegisterBody } from '../../core/schemas/auth.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { LoginRefusedResponse } from '../../core/schemas/mfa.js'
import { PublicUser, presentUser } from '../../core/schemas/users.js'
import { clientOf } from '../client.js'
import { claimsOf } from '../guards.js'
import { limitEach, perAddress } from '../rate-limits.js'
import { NO_CREDENTIALS } from '../transport.js'
import { answerLogin } from './login-answer.js'

const authRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { variant, transport, rateLimit, signedIn } = fastify.routeContext
  const { sessions, accessTokens, authentication, account } = fastify

  fastify.post('/register', {
    schema: {
      summary: 'Register a user',
      security: NO_CREDENTIALS,
      body: RegisterBody[variant],
      response: { 201: PublicUser[variant], ...errorResponses(400, 403, 409, 413, 415, 429, 500, 503) }
    },
    // Counted per client address in onRequest, before the body is read.
    onRequest: limitEach(fastify, rateLimit, [perAddress('register', rateLimit.registerMax)])
  }, async (request, reply) => {
    const { body } = request
    const user = await account.register({
      firstName: body.first_name,
      lastName: body.last_name,
      // The cookie variant's body has one (its schema requires it), the header variant's none.
      username: 'username' in body ? body.username : null,
      email: body.email,
      password: body.password
    })
    return reply.code(201).send(presentUser(user, variant))
  })

  fastify.post('/login', {
    schema: {
      summary: 'Log in with email and password',
      security: NO_CREDENTIALS,
      body: LoginBody,
      response: { 200: LoginResponse[variant], ...errorResponses(400, 401, 413, 415, 429, 500, 503), 403: LoginRefusedResponse },
      description: 'With REQUIRE_EMAIL_VERIFICATION=true, an account whose email is not verified gets 403 EMAIL_NOT_VERIFIED (after its password was checked). ' +
        'An account with TOTP gets, for the right password, 403 MFA_REQUIRED with an `mfa_token` and no token or cookie: ' +
        'POST /auth/mfa/verify with it and a code completes the login. A wrong password is the same 401 for every account.'
    },
    // Every login per client address (RATE_LIMIT_LOGIN_MAX), before the body is read; failures per account are the login throttle's.
    onRequest: limitEach(fastify, rateLimit, [perAddress('login', rateLimit.loginMax)]),
    config: { metric: 'login' }
  }, async (request, reply) => {
    return answerLogin(reply, transport, variant, await authentication.logIn(request.body.email, request.body.password, clientOf(request)))
  })

  const refreshSchema = {
    security: transport.security.refresh,
    response: { 200: AccessTokenResponse, ...errorResponses(400, 401, 403, 500, 503) }
  }
  const refresh = async (request: FastifyRequest, reply: FastifyReply) => {
    const refreshToken = transport.readRefreshToken(request)
    if (refreshToken === undefined) throw new MissingTokenError(transport.refreshTokenHint)
    const { rotate, bindAccessToken } = transport.refreshPolicy
    let expectedUserId: number | undefined
    if (bindAccessToken) {
      // A token verified before, looked up as sent (as the signed-in guard does); else read and verified, expired or not.
      const sent = transport.accessTokenAsSent(request)
      expectedUserId = sent === undefined ? undefined : accessTokens.verifiedBefore(sent)?.userId
      if (expectedUserId === undefined) {
        const accessToken = transport.readAccessToken(request)
        if (accessToken === undefined) throw new MissingTokenError(transport.accessTokenHint)
        expectedUserId = (await accessTokens.verify(accessToken, { allowExpired: true })).userId
      }
    }
    const tokens = await sessions.refresh(refreshToken, { rotate, expectedUserId }, clientOf(request))
    transport.deliver(reply, tokens)
    return { accessToken: tokens.accessToken }
  }

  fastify.post('/refresh-token', { schema: { summary: 'Get a new access token with the refresh token', ...refreshSchema }, config: { metric: 'refresh' } }, refresh)
  if (variant === 'header') {
    fastify.post('/auth-me', { schema: { summary: 'Same as /auth/refresh-token (header variant only)', ...refreshSchema }, config: { metric: 'refresh' } }, refresh)
  }

  fastify.post('/logout', {
    schema: {
      summary: 'End the session of the presented refresh token (idempotent)',
      security: transport.security.optionalRefresh,
      response: { 204: Type.Null(), ...errorResponses(400, 403, 500, 503) }
    }
  }, async (request, reply) => {
    const refreshToken = transport.readRefreshToken(request)
    if (refreshToken !== undefined) await sessions.end(refreshToken, clientOf(request))
    transport.clear(reply)
    return reply.code(204).send(null)
  })

  fastify.post('/logout-all', {
    schema: {
      summary: 'End every session of the user of the access token (logout everywhere)',
      security: transport.security.access,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 500, 503) }
    },
    onRequest: signedIn
  }, async (request, reply) => {
    await sessions.endAll(claimsOf(request).userId, clientOf(request))
    transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default authRoutes

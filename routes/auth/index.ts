import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config, Variant } from '../../src/config.js'
import { EmailNotVerifiedError, InvalidCredentialsError, MissingTokenError } from '../../src/errors.js'
import { AccessTokenResponse, LoginBody, LoginResponse, RegisterBody, type LoginResponseBody, type RegisterBodyType } from '../../src/schemas/auth.js'
import { assertPasswordAllowed } from '../../src/password-policy.js'
import { errorResponses } from '../../src/schemas/errors.js'
import { PublicUser, presentUser } from '../../src/schemas/users.js'
import { sessionClient } from '../client.js'
import { refuseWhileLocked } from '../confirm-password.js'
import { claimsOf, requireAccessToken } from '../guards.js'
import type { TokenTransport } from '../transport.js'

export interface AuthRoutesOptions {
  variant: Variant
  transport: TokenTransport
  rateLimit: Config['rateLimit']
  /** REQUIRE_EMAIL_VERIFICATION: login refuses (403) until the email is verified. */
  requireEmailVerification: boolean
}

const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (fastify, { variant, transport, rateLimit, requireEmailVerification }) => {
  const { store, passwords, sessions, accessTokens, loginThrottle, account } = fastify

  fastify.post('/register', {
    schema: {
      summary: 'Register a user',
      body: RegisterBody[variant],
      response: { 201: PublicUser[variant], ...errorResponses(400, 403, 409, 413, 415, 429, 500, 503) }
    },
    // Counted per client address in onRequest, before the body is read.
    config: { rateLimit: { max: rateLimit.registerMax } }
  }, async (request, reply) => {
    const body = request.body as RegisterBodyType
    assertPasswordAllowed(body.password)
    const user = await store.createUser({
      firstName: body.first_name,
      lastName: body.last_name,
      username: variant === 'cookie' ? body.username ?? null : null,
      email: body.email,
      passwordHash: await passwords.hash(body.password)
    })
    account.sendVerificationMail(user)
    return reply.code(201).send(presentUser(user, variant))
  })

  fastify.post('/login', {
    schema: {
      summary: 'Log in with email and password',
      body: LoginBody,
      response: { 200: LoginResponse[variant], ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503) },
      description: 'With REQUIRE_EMAIL_VERIFICATION=true, an account whose email is not verified gets 403 EMAIL_NOT_VERIFIED (after its password was checked).'
    },
    // Every login per client address (RATE_LIMIT_LOGIN_MAX); failures per account are the login throttle's.
    config: { rateLimit: { max: rateLimit.loginMax } }
  }, async (request, reply) => {
    const { email, password } = request.body
    await refuseWhileLocked(fastify, reply, email)
    const user = await store.findUserByEmail(email)
    const passwordMatches = user === undefined
      ? await passwords.verifyNothing(password)
      : await passwords.verify(user.passwordHash, password)
    if (user === undefined || !passwordMatches) {
      await loginThrottle.recordFailure(email)
      throw new InvalidCredentialsError()
    }
    await loginThrottle.clear(email)
    // Only after the password matched: the refusal tells nothing to someone who does not know it.
    if (requireEmailVerification && !user.emailVerified) throw new EmailNotVerifiedError()
    if (passwords.needsRehash(user.passwordHash)) {
      // Hash parameters were raised since this password was set: only now do we hold the password to rehash it.
      try {
        await store.updateUser(user.id, { passwordHash: await passwords.hash(password) })
      } catch (error) {
        request.log.warn({ err: error, userId: user.id }, 'password rehash failed; retried at the next login')
      }
    }
    const tokens = await sessions.start(user.id, sessionClient(request))
    transport.deliver(reply, tokens)
    // The variant's transport and user shape together make that variant's login body.
    return { user: presentUser(user, variant), ...transport.loginTokens(tokens) } as LoginResponseBody
  })

  const refreshSchema = {
    response: { 200: AccessTokenResponse, ...errorResponses(400, 401, 403, 500, 503) }
  }
  const refresh = async (request: FastifyRequest, reply: FastifyReply) => {
    const refreshToken = transport.readRefreshToken(request)
    if (refreshToken === undefined) throw new MissingTokenError(transport.refreshTokenHint)
    const { rotate, bindAccessToken } = transport.refreshPolicy
    let expectedUserId: number | undefined
    if (bindAccessToken) {
      const accessToken = transport.readAccessToken(request)
      if (accessToken === undefined) throw new MissingTokenError(transport.accessTokenHint)
      expectedUserId = (await accessTokens.verify(accessToken, { allowExpired: true })).userId
    }
    const tokens = await sessions.refresh(refreshToken, { rotate, expectedUserId })
    transport.deliver(reply, tokens)
    return { accessToken: tokens.accessToken }
  }

  fastify.post('/refresh-token', { schema: { summary: 'Get a new access token with the refresh token', ...refreshSchema } }, refresh)
  if (variant === 'header') {
    fastify.post('/auth-me', { schema: { summary: 'Same as /auth/refresh-token (header variant only)', ...refreshSchema } }, refresh)
  }

  fastify.post('/logout', {
    schema: {
      summary: 'End the session of the presented refresh token (idempotent)',
      response: { 204: Type.Null(), ...errorResponses(400, 403, 500, 503) }
    }
  }, async (request, reply) => {
    const refreshToken = transport.readRefreshToken(request)
    if (refreshToken !== undefined) await sessions.end(refreshToken)
    transport.clear(reply)
    return reply.code(204).send(null)
  })

  fastify.post('/logout-all', {
    schema: {
      summary: 'End every session of the user of the access token (logout everywhere)',
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 500, 503) }
    },
    onRequest: requireAccessToken(transport, accessTokens, store)
  }, async (request, reply) => {
    await sessions.endAll(claimsOf(request).userId)
    transport.clear(reply)
    return reply.code(204).send(null)
  })
}

export default authRoutes

import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import pinoPretty from 'pino-pretty'
import account from '../plugins/app/account.js'
import errorHandler, { toErrorBody } from '../plugins/app/error-handler.js'
import loginThrottle from '../plugins/app/login-throttle.js'
import mailer from '../plugins/app/mailer.js'
import metrics from '../plugins/app/metrics.js'
import passwords from '../plugins/app/passwords.js'
import requestIds, { requestId } from '../plugins/app/request-id.js'
import sessions from '../plugins/app/sessions.js'
import store from '../plugins/app/store.js'
import tokens from '../plugins/app/tokens.js'
import tokenPruning from '../plugins/app/token-pruning.js'
import cookie from '../plugins/external/cookie.js'
import helmet from '../plugins/external/helmet.js'
import rateLimit from '../plugins/external/rate-limit.js'
import redis from '../plugins/external/redis.js'
import swagger from '../plugins/external/swagger.js'
import healthRoutes from '../routes/health/index.js'
import api from '../routes/index.js'
import wellKnownRoutes from '../routes/well-known/index.js'
import type { Config, Variant } from './config.js'
import { buildValidatorCompiler } from './validation.js'

export interface AppOptions {
  config: Config
  /** The variants to serve and where; by default the configured variant at the root. */
  mounts?: Array<{ variant: Variant, prefix: string }>
}

/** Log paths whose value is replaced by "[redacted]". */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'req.headers["x-refresh-token"]',
  'res.headers["set-cookie"]', 'headers.authorization', 'headers.cookie', 'headers["set-cookie"]',
  ...['password', 'passwordHash', 'accessToken', 'refreshToken', 'token'].flatMap(field => [field, `*.${field}`, `*.*.${field}`])
]

/** The request as logged: Fastify's fields plus the headers that explain a refusal (origin, user agent), credentials redacted. */
function serializeRequest (request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: request.url,
    host: request.host,
    remoteAddress: request.ip,
    headers: request.headers
  }
}

/** Options for the Fastify instance that app is registered on (server.ts and the tests share them). */
export function serverOptions (config: Config): FastifyServerOptions {
  return {
    logger: {
      level: config.logLevel,
      serializers: { req: serializeRequest },
      // Never log a credential: the headers that carry one, and any logged object's password or token fields.
      redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
      // Pretty lines in development, written in-process (a transport's worker cannot load in the single executable).
      ...(config.nodeEnv === 'development' ? { stream: pinoPretty({ ignore: 'pid,hostname' }) } : {})
    },
    genReqId: requestId,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    // A malformed URL reaches no route; answer it in the one error shape too.
    frameworkErrors: (error, _request, reply) => {
      const body = toErrorBody(error)
      ;(reply as FastifyReply).code(body.statusCode).send(body)
    }
  }
}

/** The service as a plugin: external plugins, then our own, then the routes. */
export default async function app (fastify: FastifyInstance, { config, mounts }: AppOptions): Promise<void> {
  fastify.setValidatorCompiler(buildValidatorCompiler())
  // Only JSON bodies: text/plain would otherwise parse as a string and fail later as a schema error instead of 415.
  fastify.removeContentTypeParser('text/plain')
  // Many clients send Content-Type: application/json with no body on a bodiless POST (refresh, logout).
  // Read that as no body; routes that need one still refuse it through their schema.
  const parseJson = fastify.getDefaultJsonParser('error', 'error')
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') done(null, undefined)
    else parseJson(request, body.toString(), done)
  })

  await fastify.register(helmet)
  await fastify.register(cookie)
  await fastify.register(redis, { redis: config.redis })
  await fastify.register(rateLimit, { rateLimit: config.rateLimit })
  await fastify.register(swagger)

  await fastify.register(errorHandler)
  await fastify.register(requestIds)
  await fastify.register(metrics)
  await fastify.register(store, { databaseUrl: config.databaseUrl })
  await fastify.register(passwords)
  await fastify.register(loginThrottle, { rateLimit: config.rateLimit })
  await fastify.register(tokens, {
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    issuer: config.jwtIssuer,
    audience: config.jwtAudience,
    privateKeyPem: config.jwtPrivateKey,
    reloadIntervalSeconds: config.signingKeyReloadSeconds,
    rotateAfterSeconds: config.signingKeyRotateAfterSeconds
  })
  await fastify.register(sessions, {
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    refreshReuseGraceSeconds: config.refreshReuseGraceSeconds
  })
  await fastify.register(tokenPruning, { intervalSeconds: config.refreshTokenPruneSeconds })
  // After the store: plugins close in reverse order, so queued mail jobs finish before the store closes.
  await fastify.register(mailer, { mail: config.mail, nodeEnv: config.nodeEnv })
  await fastify.register(account, {
    publicUrl: config.mail.publicUrl,
    passwordResetTtlSeconds: config.passwordResetTtlSeconds,
    emailVerificationTtlSeconds: config.emailVerificationTtlSeconds
  })

  await fastify.register(healthRoutes)
  await fastify.register(wellKnownRoutes)
  for (const { variant, prefix } of mounts ?? [{ variant: config.variant, prefix: '' }]) {
    await fastify.register(api, { prefix, variant, config })
  }
}

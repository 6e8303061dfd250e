import { STATUS_CODES, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyHttpOptions, FastifyInstance, FastifyLoggerOptions, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import account from '../plugins/app/account.js'
import admin from '../plugins/app/admin.js'
import userImport from '../plugins/app/user-import.js'
import clock from '../plugins/app/clock.js'
import authentication from '../plugins/app/authentication.js'
import emailCodes from '../plugins/app/email-codes.js'
import organisations from '../plugins/app/organisations.js'
import identities from '../plugins/app/identities.js'
import errorHandler, { toErrorBody } from '../plugins/app/error-handler.js'
import loginThrottle from '../plugins/app/login-throttle.js'
import mailer from '../plugins/app/mailer.js'
import metrics from '../plugins/app/metrics.js'
import mfa from '../plugins/app/mfa.js'
import passkeys from '../plugins/app/passkeys.js'
import oauth from '../plugins/app/oauth.js'
import oidc from '../plugins/app/oidc.js'
import passwords from '../plugins/app/passwords.js'
import requestIds, { requestId } from '../plugins/app/request-id.js'
import securityEvents from '../plugins/app/security-events.js'
import sessions from '../plugins/app/sessions.js'
import statusList from '../plugins/app/status-list.js'
import store from '../plugins/app/store.js'
import tokens from '../plugins/app/tokens.js'
import tokenPruning from '../plugins/app/token-pruning.js'
import userCache from '../plugins/app/user-cache.js'
import webhooks from '../plugins/app/webhooks.js'
import cookie from '../plugins/external/cookie.js'
import cors from '../plugins/external/cors.js'
import helmet from '../plugins/external/helmet.js'
import rateLimit from '../plugins/external/rate-limit.js'
import redis from '../plugins/external/redis.js'
import healthRoutes from '../routes/health/index.js'
import adminRoutes from '../routes/admin/index.js'
import api from '../routes/index.js'
import pages, { pageLayout } from '../routes/pages/index.js'
import oauthRoutes from '../routes/oauth/index.js'
import rootRoutes from '../routes/root/index.js'
import statusListRoutes from '../routes/status-list/index.js'
import wellKnownRoutes from '../routes/well-known/index.js'
import type { Clock } from '../core/clock.js'
import type { Config, Variant } from '../core/config.js'
import type { Argon2Parameters } from '../core/passwords/hashing-pool.js'
import { buildSerializerCompiler } from '../core/serialization.js'
import { buildValidatorCompiler } from '../core/validation.js'
import { lazyRequestLoggers, RequestLines } from './request-logger.js'

export interface AppOptions {
  config: Config
  /** The variants to serve and where; by default the configured variant at the root. */
  mounts?: Array<{ variant: Variant, prefix: string }>
  /** Where the rules read the time; the system clock by default (tests pass one they move forward). */
  clock?: Clock
  /**
   * Argon2id parameters to hash with instead of the stored (calibrated) ones, below OWASP's minimum if
   * need be: the test suite's cheap ones (test/fixtures/build.ts). No setting reaches this.
   */
  passwordHashParameters?: Argon2Parameters
}

/** Log paths whose value is replaced by "[redacted]". */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'req.headers["x-refresh-token"]',
  'res.headers["set-cookie"]', 'headers.authorization', 'headers.cookie', 'headers["set-cookie"]',
  ...['password', 'passwordHash', 'accessToken', 'refreshToken', 'token'].flatMap(field => [field, `*.${field}`, `*.*.${field}`])
]

/**
 * The request as logged: Fastify's fields plus the headers that explain a refusal (origin, user agent), credentials redacted.
 * The URL without its query string: a link's `?token=` (a reset or verification token) must never reach the log.
 */
function serializeRequest (request: FastifyRequest): Record<string, unknown> {
  const query = request.url.indexOf('?')
  return {
    method: request.method,
    url: query === -1 ? request.url : request.url.slice(0, query),
    host: request.host,
    remoteAddress: request.ip,
    headers: request.headers
  }
}

/**
 * A hop count as proxy-addr (Express) reads it: trust the n nearest hops, so request.ip is the address
 * the outermost of our proxies saw. (Fastify 5 takes a bare number as "trust nothing".) It assumes every
 * request comes through those proxies: a service reachable directly should list the proxies' addresses instead.
 */
function trustProxyOption (trustProxy: Config['trustProxy']): FastifyServerOptions['trustProxy'] {
  if (typeof trustProxy !== 'number') return trustProxy
  return (_address, hop) => hop < trustProxy
}

/**
 * What Node refuses before a request reaches Fastify (a request past REQUEST_TIMEOUT, headers too large,
 * malformed HTTP), answered in the contract's error shape on the raw socket, which is then closed.
 */
function answerClientError (this: FastifyInstance, error: Error & { code?: string }, socket: Duplex): void {
  // A connection reset or already closed: nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [statusCode, code, message] = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, 'REQUEST_TIMEOUT', 'The request did not arrive within REQUEST_TIMEOUT']
    : error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'HEADERS_TOO_LARGE', 'The request headers are too large']
      : [400, 'BAD_REQUEST', 'The request is not valid HTTP']
  this.log.debug({ err: error }, 'client error')
  const body = JSON.stringify({ statusCode, code, error: STATUS_CODES[statusCode], message })
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  }
  socket.destroy()
}

/**
 * A connection silent for REQUEST_TIMEOUT (the connectionTimeout): when a request on it is still unanswered (its body
 * stalled), it gets the documented 408 before it closes, as from Node's whole-request bound (answerClientError); an
 * idle one just closes. Without this listener Node destroyed the socket unanswered, and which of the two bounds
 * noticed a stalled body first was a race (issue 33, 16).
 */
function closeSilentConnection (this: FastifyInstance, socket: Socket): void {
  // The response of the request under way on the socket: Node's own field (undocumented, there since Node 0.x);
  // tracking it through a 'request' listener instead would cost every request a closure.
  const response = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  if (response == null || response.headersSent) {
    socket.destroy()
    return
  }
  answerClientError.call(this, Object.assign(new Error('connection silent past REQUEST_TIMEOUT'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)
}

/**
 * Where the log lines go in development: pino-pretty's readable lines, written in-process (a
 * transport's worker cannot load in the single executable). Loaded only there: it is no part of a
 * production start.
 */
export async function developmentLogStream (): Promise<NonNullable<FastifyLoggerOptions['stream']>> {
  const { default: pinoPretty } = await import('pino-pretty')
  return pinoPretty({ ignore: 'pid,hostname' })
}

/**
 * Options for the Fastify instance that app is registered on (server.ts and the tests share them);
 * `logStream` where the lines go instead of standard output (development's, developmentLogStream).
 */
export function serverOptions (config: Config, { logStream }: { logStream?: FastifyLoggerOptions['stream'] } = {}): FastifyHttpOptions<Server> {
  return {
    logger: {
      level: config.logLevel,
      serializers: { req: serializeRequest },
      // Never log a credential: the headers that carry one, and any logged object's password or token fields.
      redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
      ...(logStream === undefined ? {} : { stream: logStream })
    },
    // A request's child logger is made only when it writes a line, and its info lines only at info (src/request-logger.ts).
    childLoggerFactory: lazyRequestLoggers,
    logController: new RequestLines(config.logLevel),
    genReqId: requestId,
    bodyLimit: config.bodyLimit,
    // REQUEST_TIMEOUT: a request (headers and body) that has not arrived and been answered by then, and a
    // connection silent that long, are closed: a client that stalls or trickles its body holds nothing for long.
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.requestTimeoutMs,
    // Node checks requestTimeout on a timer (30 s by default), which would let a request live up to twice the bound.
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(1, Math.min(1000, Math.floor(config.requestTimeoutMs / 2)))
    },
    clientErrorHandler: answerClientError,
    trustProxy: trustProxyOption(config.trustProxy),
    // A malformed URL reaches no route; answer it in the one error shape too.
    frameworkErrors: (error, _request, reply) => {
      const body = toErrorBody(error)
      ;(reply as FastifyReply).code(body.statusCode).send(body)
    }
  }
}

/** The service as a plugin: external plugins, then our own, then the routes. */
export default async function app (fastify: FastifyInstance, { config, mounts, clock: appClock, passwordHashParameters }: AppOptions): Promise<void> {
  // With a listener, Node leaves a timed-out socket to it (Fastify's connectionTimeout arms the timeout).
  fastify.server.on('timeout', closeSilentConnection.bind(fastify))
  fastify.setValidatorCompiler(buildValidatorCompiler())
  fastify.setSerializerCompiler(buildSerializerCompiler())
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
  // ALLOWED_ORIGINS: CORS for browser apps on other origins; nothing at all when none is listed (the hot path stays as it is).
  await fastify.register(cors, { allowedOrigins: config.allowedOrigins })
  await fastify.register(cookie)
  await fastify.register(redis, { redis: config.redis })
  await fastify.register(rateLimit, { rateLimit: config.rateLimit })
  // Before any route (swagger's too): metrics give each route its own onResponse hook as it is added.
  // /metrics on the public listener only outside production and without METRICS_PORT (src/metrics-listener.ts serves it apart).
  await fastify.register(metrics, { publicRoute: config.nodeEnv !== 'production' && config.metrics.port === undefined })
  // DOCS: /docs and /openapi.json (off in production by default: they map the whole surface for an attacker).
  // Loaded only then: with the UI's files and the YAML writer, half a megabyte of code that a production start never needs.
  if (config.docs) await fastify.register((await import('../plugins/external/swagger.js')).default)

  await fastify.register(clock, { clock: appClock })
  await fastify.register(errorHandler)
  await fastify.register(requestIds)
  // The store comes with the revocation set that follows its log (fastify.revocations): every plugin gets the one store.
  await fastify.register(store, { databaseUrl: config.databaseUrl, accessTokenTtlSeconds: config.accessTokenTtlSeconds })
  // GET /users/:id answers from memory, kept exact through the same log (USER_CACHE_MAX).
  await fastify.register(userCache, { max: config.userCacheMax })
  await fastify.register(passwords, { queueMax: config.passwordHashQueueMax, hashTargetMs: config.passwordHashTargetMs, fixedParameters: passwordHashParameters })
  await fastify.register(loginThrottle, { rateLimit: config.rateLimit })
  await fastify.register(tokens, {
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    issuer: config.jwtIssuer,
    audience: config.jwtAudience,
    privateKeyPem: config.jwtPrivateKey,
    signingKeyEncryptionKey: config.signingKeyEncryptionKey,
    warnWhenUnsealed: config.nodeEnv === 'production',
    reloadIntervalSeconds: config.signingKeyReloadSeconds,
    rotateAfterSeconds: config.signingKeyRotateAfterSeconds
  })
  // The webhooks subscribe to the security events (the events they map to are written with them); they close before the store (reverse order).
  await fastify.register(securityEvents)
  await fastify.register(webhooks, { webhooks: config.webhooks })
  await fastify.register(statusList, { publicUrl: config.mail.publicUrl, ttlSeconds: config.statusListTtlSeconds })
  await fastify.register(sessions, {
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    refreshReuseGraceSeconds: config.refreshReuseGraceSeconds,
    sessionMaxAgeSeconds: config.sessionMaxAgeSeconds,
    reauthMaxAgeSeconds: config.reauthMaxAgeSeconds
  })
  await fastify.register(tokenPruning, {
    intervalSeconds: config.refreshTokenPruneSeconds,
    securityEventRetentionSeconds: config.securityEventRetentionSeconds,
    auditRetentionSeconds: config.auditRetentionSeconds
  })
  // After the store: plugins close in reverse order, so queued mail jobs finish before the store closes.
  await fastify.register(mailer, { mail: config.mail, nodeEnv: config.nodeEnv, sealingKey: config.signingKeyEncryptionKey })
  await fastify.register(mfa, {
    issuer: config.jwtIssuer,
    mfaTokenTtlSeconds: config.mfaTokenTtlSeconds,
    signingKeyEncryptionKey: config.signingKeyEncryptionKey
  })
  // The mailed sign-in codes: the service's own sign-in (POST /auth/email-code) and a re-authentication's proof.
  await fastify.register(emailCodes, { publicUrl: config.mail.publicUrl, secretKey: config.signingKeyEncryptionKey })
  await fastify.register(authentication, { requireEmailVerification: config.requireEmailVerification })
  await fastify.register(account, {
    publicUrl: config.mail.publicUrl,
    passwordResetTtlSeconds: config.passwordResetTtlSeconds,
    emailVerificationTtlSeconds: config.emailVerificationTtlSeconds
  })
  // Organisations, their members and invitations (docs/organisations.md).
  await fastify.register(organisations, { publicUrl: config.mail.publicUrl })
  // Users from other systems (POST /admin/users/import, account-service users import).
  await fastify.register(userImport)
  await fastify.register(passkeys, config.webauthn)
  // Sign-in with OpenID providers: discovery at start, each within OIDC_DISCOVERY_TIMEOUT.
  await fastify.register(oidc, { providers: config.oidc.providers, discoveryTimeoutSeconds: config.oidc.discoveryTimeoutSeconds })
  await fastify.register(identities)
  await fastify.register(admin, {
    requireMfa: config.adminRequireMfa,
    publicUrl: config.mail.publicUrl,
    passwordResetTtlSeconds: config.passwordResetTtlSeconds,
    emailVerificationTtlSeconds: config.emailVerificationTtlSeconds
  })
  // The OAuth 2.1 / OpenID provider for other apps: the sign-in page calls the API of the mount the pages use.
  const mounted = mounts ?? [{ variant: config.variant, prefix: '' }]
  const { apiPrefix } = pageLayout(mounted)
  const pageVariant = mounted.find(mount => mount.prefix === apiPrefix)?.variant ?? config.variant
  await fastify.register(oauth, {
    issuer: config.mail.publicUrl,
    variant: pageVariant,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    grantTtlSeconds: config.sessionMaxAgeSeconds,
    registrationToken: config.oauthRegistrationToken,
    trustProxy: config.trustProxy !== false,
    signingKeyEncryptionKey: config.signingKeyEncryptionKey
  })

  await fastify.register(healthRoutes)
  await fastify.register(wellKnownRoutes)
  await fastify.register(statusListRoutes)
  await fastify.register(oauthRoutes, { config, variant: pageVariant, apiPrefix })
  // The admin API: once, at /admin, taking the access token of the mount the pages use.
  await fastify.register(adminRoutes, { prefix: '/admin', config, variant: pageVariant, apiPrefix })
  for (const { variant, prefix } of mounted) {
    await fastify.register(api, { prefix, variant, config })
  }
  // PAGES: the pages the mailed links open, and the account console (routes/pages).
  const docsUrl = config.docs ? '/docs' : undefined
  if (config.pages) await fastify.register(pages, { mounts: mounted, docsUrl })
  // GET /: the console where there is one, else a map of where things are.
  const { consolePrefix } = pageLayout(mounted)
  await fastify.register(rootRoutes, { consoleUrl: config.pages && consolePrefix !== undefined ? `${consolePrefix}/account` : undefined, docsUrl })
}

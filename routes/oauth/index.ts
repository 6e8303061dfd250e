import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config, Variant } from '../../core/config.js'
import { pageCsp, PAGE_CSP_DIRECTIVES } from '../../plugins/external/helmet.js'
import { routeContextFor } from '../context.js'
import interactionRoutes from './interactions.js'

export interface OAuthRoutesOptions {
  config: Config
  /** The mount whose API the sign-in page calls (routes/pages pageLayout). */
  variant: Variant
  apiPrefix: string
}

/** The client a token request names (HTTP Basic, else the form's client_id); its address when it names none. */
function tokenRequestClient (request: FastifyRequest): string {
  const header = request.headers.authorization
  if (header?.startsWith('Basic ') === true) {
    const id = Buffer.from(header.slice(6), 'base64').toString().split(':')[0]
    try {
      if (id !== '') return `oauth-client:${decodeURIComponent(id)}`
    } catch {}
  }
  const body = request.body
  const clientId = Buffer.isBuffer(body) ? new URLSearchParams(body.toString()).get('client_id') : null
  return clientId === null || clientId === '' ? `oauth-address:${request.ip}` : `oauth-client:${clientId}`
}

/** What userinfo answers (core/oauth/provider.ts claimsOf): `sub` and the claims of the token's scopes. */
const USERINFO_RESPONSE = {
  type: 'object',
  properties: {
    sub: { type: 'string' },
    email: { type: 'string' },
    email_verified: { type: 'boolean' },
    given_name: { type: 'string' },
    family_name: { type: 'string' },
    preferred_username: { type: 'string' }
  },
  required: ['sub'],
  // A claim added to a scope later is answered, not dropped.
  additionalProperties: true
} as const

/** The largest form oidc-provider reads; a bigger token request is refused before it is buffered whole. */
const TOKEN_BODY_LIMIT = 56 * 1024

/**
 * The OAuth 2.1 / OpenID provider's routes. Its protocol endpoints (/oauth/*, the discovery document)
 * go to oidc-provider as they come: it reads the body itself, so no parser of ours consumes it. The
 * security headers already set (helmet's hooks) go with the answer; the provider's own pages set the
 * pages' CSP (core/oauth/provider-pages.ts). The sign-in and consent page is ours (interactions.ts).
 */
export default async function oauthRoutes (fastify: FastifyInstance, { config, variant, apiPrefix }: OAuthRoutesOptions): Promise<void> {
  const { oauth } = fastify

  async function forward (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!oauth.acceptsHost(request.raw)) {
      await reply.code(400).send({ error: 'invalid_request', error_description: 'the Host header is not a host name' })
      return
    }
    // Built (or rebuilt for a new signing key) before the answer is handed over; a store that cannot give
    // the cookie key yet answers 503 in the service's error shape.
    await oauth.current()
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value)
    }
    // A body Fastify has read (the token endpoint's, for its limit) is handed over as read; oidc-provider takes it.
    if (Buffer.isBuffer(request.body)) Object.assign(request.raw, { body: request.body })
    reply.hijack()
    oauth.handle(request.raw, reply.raw)
  }

  /**
   * Userinfo's common case, a server-side app's GET with its JWT access token in the header, answered
   * here: the token checked by the one function the provider's own path asks too (oauth.appTokens,
   * core/oauth/structured-tokens.ts), without the provider's Koa stack (issue 34: it cost 0.10 of
   * hello-world where GET /users/:id, the same work, runs at 0.60). Anything else (a browser's call,
   * answered with its client's CORS; a token in the form; a token that does not hold, answered 401 with
   * WWW-Authenticate) goes to the provider as before.
   */
  async function userinfo (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const authorization = request.headers.authorization
    if (request.headers.origin === undefined && authorization?.startsWith('Bearer ') === true && oauth.acceptsHost(request.raw)) {
      const token = authorization.slice(7)
      const claims = oauth.appTokens.knownUserinfoOf(token) ?? await oauth.appTokens.userinfoOf(token)
      if (claims !== undefined) {
        await reply.header('cache-control', 'no-store').send(claims)
        return
      }
    }
    await forward(request, reply)
  }

  const methods = ['GET', 'POST', 'OPTIONS', 'PUT', 'DELETE'] as const
  await fastify.register(async (protocol) => {
    protocol.removeAllContentTypeParsers()
    protocol.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    // HEAD goes to the provider, as before (its router answers it).
    protocol.route({ method: 'GET', url: '/oauth/userinfo', exposeHeadRoute: false, schema: { hide: true, response: { 200: USERINFO_RESPONSE } }, handler: userinfo })
    protocol.route({ method: [...methods], url: '/.well-known/openid-configuration', schema: { hide: true }, handler: forward })
    protocol.route({ method: [...methods], url: '/oauth/*', schema: { hide: true }, handler: forward })
  })
  // The token endpoint is limited per client (RATE_LIMIT_OAUTH_TOKEN_MAX), which the form names: its body is read
  // here, before the limit is counted, and handed to oidc-provider as read.
  await fastify.register(async (token) => {
    token.removeAllContentTypeParsers()
    token.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer', bodyLimit: TOKEN_BODY_LIMIT }, (_request, body, done) => { done(null, body) })
    token.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    token.route({
      method: [...methods],
      url: '/oauth/token',
      schema: { hide: true },
      config: { rateLimit: { max: config.rateLimit.oauthTokenMax, keyGenerator: tokenRequestClient, hook: 'preHandler' } },
      handler: forward
    })
  })

  await fastify.register(async (pages) => {
    pages.decorate('routeContext', routeContextFor(pages, variant, apiPrefix, config))
    pages.addHook('onRequest', pageCsp(PAGE_CSP_DIRECTIVES))
    await pages.register(interactionRoutes, { prefix: '/oauth/interaction', apiPrefix, variant })
  })
}

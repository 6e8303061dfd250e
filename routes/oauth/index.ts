import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config, Variant } from '../../core/config.js'
import { pageCsp, PAGE_CSP_DIRECTIVES } from '../../plugins/external/helmet.js'
import { OAUTH_ROUTES } from '../../core/oauth/provider.js'
import { userinfoAnswerSchema } from '../../core/oauth/user-claims.js'
import { TOKEN_ANSWER_HEADERS, type TokenAnswer } from '../../core/oauth/token-requests.js'
import { mountRouteContext } from '../context.js'
import { limitEach } from '../rate-limits.js'
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

/** Where the sign-in and consent pages live (core/oauth/provider.ts interactionPath). */
const INTERACTION_PREFIX = '/oauth/interaction/'

/** The largest form oidc-provider reads; a bigger token request is refused before it is buffered whole. */
const TOKEN_BODY_LIMIT = 56 * 1024

/** The largest authorization or logout form: it goes on as a query, which must fit in a request line (Node takes 16 KiB of headers). */
const FORM_BODY_LIMIT = 8 * 1024

/**
 * The OAuth 2.1 / OpenID provider's routes. Its protocol endpoints (/oauth/*, the discovery document)
 * go to oidc-provider as they come: it reads the body itself, so no parser of ours consumes it. The
 * security headers already set (helmet's hooks) go with the answer; the provider's own pages set the
 * pages' CSP (core/oauth/provider-pages.ts). The sign-in and consent page is ours (interactions.ts).
 */
const oauthRoutes: FastifyPluginAsyncTypebox<OAuthRoutesOptions> = async (fastify, { config, variant, apiPrefix }) => {
  const { oauth } = fastify

  async function forward (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // The sign-in pages' paths are ours (interactions.ts), not the provider's: a method they do not serve
    // is the service's 404, whatever the Host header says (it reached the provider, and its Host check, before).
    if (request.url.startsWith(INTERACTION_PREFIX)) {
      reply.callNotFound()
      return
    }
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
   * answered with its client's CORS; a DPoP request or a token bound to a DPoP key; a token in the form; a
   * token that does not hold, answered 401 with WWW-Authenticate) goes to the provider as before.
   */
  function userinfo (request: FastifyRequest, reply: FastifyReply): Promise<void> | undefined {
    const authorization = request.headers.authorization
    if (request.headers.origin === undefined && request.headers.dpop === undefined && authorization?.startsWith('Bearer ') === true && oauth.acceptsHost(request.raw)) {
      const token = authorization.slice(7)
      // A token, grant and user known in memory: answered without a promise, as GET /users/:id answers a kept user.
      const known = oauth.appTokens.knownUserinfoOf(token)
      if (known !== undefined) {
        reply.header('cache-control', 'no-store').send(known)
        return
      }
      return bearerUserinfo(token, request, reply)
    }
    return forward(request, reply)
  }

  /** userinfo's common case where memory does not answer: the token verified, its grant and user read. */
  async function bearerUserinfo (token: string, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const claims = await oauth.appTokens.bearerUserinfoOf(token)
    if (claims !== undefined) {
      await reply.header('cache-control', 'no-store').send(claims)
      return
    }
    await forward(request, reply)
  }

  /**
   * The token endpoint. A client-credentials or authorization_code grant in its common case is answered here
   * (core/oauth/client-credentials-grant.ts, authorization-code-grant.ts), without oidc-provider's Koa stack (issue 34:
   * its middleware was half of a grant and most of an exchange), with the tokens and the answer oidc-provider would
   * give; every other request, failures included, goes to oidc-provider as before.
   */
  async function tokenEndpoint (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (config.oauthTokenFastPath && request.method === 'POST' && Buffer.isBuffer(request.body) && oauth.acceptsHost(request.raw)) {
      let answer: TokenAnswer | undefined
      try {
        answer = await oauth.tokenFastPath({ form: request.body, headers: request.headers })
      } catch (error) {
        // The store failed under it before anything was spent: oidc-provider meets the same failure and answers it in its shape.
        request.log.warn({ err: error }, 'the token fast path failed; the provider answers')
      }
      if (answer !== undefined) {
        await reply.code(answer.statusCode).headers(TOKEN_ANSWER_HEADERS).send(answer.body)
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
    protocol.route({ method: 'GET', url: '/oauth/userinfo', exposeHeadRoute: false, schema: { hide: true, response: { 200: userinfoAnswerSchema(variant) } }, handler: userinfo })
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
      preHandler: limitEach(fastify, config.rateLimit, [{ name: 'oauth-token', max: config.rateLimit.oauthTokenMax, key: tokenRequestClient }]),
      handler: tokenEndpoint
    })
  })

  // OpenID Connect Core §3.1.2.1 and RP-Initiated Logout §2: the authorization and logout endpoints take POST too.
  // oidc-provider serves POST there only with SameSite=None session cookies (a browser drops those on plain http,
  // and they would go with every other site's requests); instead the form is answered 303 to the same endpoint with
  // its parameters as the query, which the browser follows as a top-level GET carrying the Lax cookies.
  await fastify.register(async (forms) => {
    forms.removeAllContentTypeParsers()
    forms.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => { done(null, body) })
    forms.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    for (const url of [OAUTH_ROUTES.authorization, OAUTH_ROUTES.end_session]) {
      forms.route({
        method: 'POST',
        url,
        schema: { hide: true },
        async handler (request, reply) {
          if (!Buffer.isBuffer(request.body)) {
            await reply.code(400).send({ error: 'invalid_request', error_description: 'the parameters are posted as application/x-www-form-urlencoded' })
            return
          }
          const query = new URLSearchParams(request.url.split('?')[1] ?? '')
          for (const [name, value] of new URLSearchParams(request.body.toString())) query.append(name, value)
          await reply.header('cache-control', 'no-store').redirect(`${url}?${query.toString()}`, 303)
        }
      })
    }
  })

  // The sign-in and consent page calls the API of the pages' mount with its token: its route context and hooks.
  await fastify.register(async (pages) => {
    mountRouteContext(pages, { variant, prefix: apiPrefix, config })
    pages.addHook('onRequest', pageCsp(PAGE_CSP_DIRECTIVES))
    await pages.register(interactionRoutes, { prefix: INTERACTION_PREFIX.slice(0, -1), apiPrefix, variant })
  })
}

export default oauthRoutes

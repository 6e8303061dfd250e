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

/** The client id of a token request that authenticates with HTTP Basic; else its address keys the limit. */
function tokenRequestKey (request: FastifyRequest): string {
  const header = request.headers.authorization
  if (header?.startsWith('Basic ') === true) {
    const id = Buffer.from(header.slice(6), 'base64').toString().split(':')[0]
    if (id !== '') return `oauth-client:${decodeURIComponent(id)}`
  }
  return `oauth-address:${request.ip}`
}

/**
 * The OAuth 2.1 / OpenID provider's routes. Its protocol endpoints (/oauth/*, the discovery document)
 * go to oidc-provider as they come: it reads the body itself, so no parser of ours consumes it. The
 * security headers already set (helmet's hooks) go with the answer; the provider's own pages set the
 * pages' CSP (core/oauth/provider-pages.ts). The sign-in and consent page is ours (interactions.ts).
 */
export default async function oauthRoutes (fastify: FastifyInstance, { config, variant, apiPrefix }: OAuthRoutesOptions): Promise<void> {
  const { oauth } = fastify

  function forward (request: FastifyRequest, reply: FastifyReply): void {
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value)
    }
    reply.hijack()
    oauth.handle(request.raw, reply.raw)
  }

  await fastify.register(async (protocol) => {
    protocol.removeAllContentTypeParsers()
    protocol.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    const methods = ['GET', 'POST', 'OPTIONS', 'PUT', 'DELETE'] as const
    protocol.route({ method: [...methods], url: '/.well-known/openid-configuration', schema: { hide: true }, handler: forward })
    protocol.route({
      method: [...methods],
      url: '/oauth/token',
      schema: { hide: true },
      config: { rateLimit: { max: config.rateLimit.oauthTokenMax, keyGenerator: tokenRequestKey } },
      handler: forward
    })
    protocol.route({ method: [...methods], url: '/oauth/*', schema: { hide: true }, handler: forward })
  })

  await fastify.register(async (pages) => {
    pages.decorate('routeContext', routeContextFor(pages, variant, apiPrefix, config))
    pages.addHook('onRequest', pageCsp(PAGE_CSP_DIRECTIVES))
    await pages.register(interactionRoutes, { prefix: '/oauth/interaction', apiPrefix, variant })
  })
}

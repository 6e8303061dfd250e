import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, onRequestHookHandler, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify'
import type { Config, Variant } from '../core/config.js'
import type { Actor } from '../core/sessions/actor.js'
import { clientOf } from './client.js'
import { claimsOf, requireAccessToken, signedInUser } from './guards.js'
import { transportFor, type TokenTransport } from './transport.js'

/**
 * What every route of one mounted variant shares, built once per variant (routes/index.ts decorates each
 * variant's encapsulated context with it): which variant, how its tokens travel, its limits, the one
 * signed-in guard, and the actor the account rules take. Route plugins read it instead of each taking
 * the same options.
 */
export interface RouteContext {
  variant: Variant
  /** Where this variant is mounted ('' for the root); also scopes its cookies. */
  mountPrefix: string
  config: Config
  transport: TokenTransport
  rateLimit: Config['rateLimit']
  /** The signed-in guard: a valid access token of a live session, its claims on the request (claimsOf). */
  signedIn: onRequestHookHandler
  /** The signed-in user, its session and client, as the account rules take them. */
  actorOf (request: FastifyRequest): Promise<Actor>
}

declare module 'fastify' {
  interface FastifyInstance {
    routeContext: RouteContext
  }
}

export function routeContextFor (fastify: FastifyInstance, variant: Variant, mountPrefix: string, config: Config): RouteContext {
  const transport = transportFor(variant, {
    prefix: mountPrefix,
    secure: config.cookieSecure,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds
  })
  const { store } = fastify
  return {
    variant,
    mountPrefix,
    config,
    transport,
    rateLimit: config.rateLimit,
    signedIn: requireAccessToken(transport, fastify.accessTokens, fastify.revocations, store),
    actorOf: async (request) => ({ user: await signedInUser(store, request), sessionId: claimsOf(request).sessionId, client: clientOf(request) })
  }
}

/** A route plugin's instance: the TypeBox type provider, as FastifyPluginAsyncTypebox gives it. */
export type RoutesInstance = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>

/**
 * Registers `routes` in an encapsulated context of their own where every route needs a signed-in
 * session: the variant's guard is added once, for all of them.
 */
export async function signedInRoutes (fastify: FastifyInstance, routes: (own: RoutesInstance) => void): Promise<void> {
  const { signedIn } = fastify.routeContext
  await fastify.register(async (scope) => {
    scope.addHook('onRequest', signedIn)
    routes(scope.withTypeProvider<TypeBoxTypeProvider>())
  })
}

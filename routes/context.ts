import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler, RouteOptions } from 'fastify'
import type { Config, Variant } from '../core/config.js'
import type { Actor } from '../core/sessions/actor.js'
import { normalizeUserFields } from '../core/schemas/common.js'
import { clientOf } from './client.js'
import { claimsOf, refuseCrossSiteRequests, requireAccessToken, signedInUser } from './guards.js'
import { transportFor, type TokenTransport } from './transport.js'

/** Where one variant is mounted: the API mounts (routes/index.ts), and the mount the admin API and the sign-in pages call. */
export interface Mount {
  variant: Variant
  /** Where this variant is mounted ('' for the root); also scopes its cookies. */
  prefix: string
  config: Config
}

/**
 * What every route of one mounted variant shares, built once per mount: which variant, how its tokens
 * travel, its limits, the one signed-in guard, and the actor the account rules take. Route plugins read it
 * (fastify.routeContext) instead of each taking the same options.
 */
export interface RouteContext {
  variant: Variant
  /** Where this variant is mounted ('' for the root); also scopes its cookies. */
  mountPrefix: string
  config: Config
  transport: TokenTransport
  rateLimit: Config['rateLimit']
  /**
   * The signed-in guard, a route's `onRequest` option: a valid access token of a live session, its claims on
   * the request (claimsOf). A guarded route says so itself, next to its OpenAPI `security`.
   */
  signedIn: onRequestHookHandler
  /** The signed-in user, its session and client, as the account rules take them. */
  actorOf (request: FastifyRequest): Promise<Actor>
}

declare module 'fastify' {
  interface FastifyInstance {
    routeContext: RouteContext
  }
}

/** Set in onRequest, before any other hook may answer (a limit, a guard), so that errors carry it too. */
function noStore (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  reply.header('cache-control', 'no-store')
  done()
}

function normalizeBody (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  normalizeUserFields(request.body)
  done()
}

/**
 * Trims names and lower-cases the email before the schema judges them: on the routes that take a body only,
 * and synchronously (a hook on every route, as an async function, cost each GET a promise).
 */
function normalizeBodies (route: RouteOptions): void {
  if (route.schema?.body === undefined) return
  const existing = route.preValidation
  route.preValidation = [normalizeBody, ...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing])]
}

/**
 * Makes an encapsulated context one mount of a variant, before its routes are added: decorates it with the
 * route context and the request with `accessClaims` (set by the guard), and adds the variant's hooks, once:
 * every answer is `Cache-Control: no-store` (each may carry a token or personal data, errors included), the
 * cookie variant refuses cross-site state changes (its cookies ride along with them), and a body's user
 * fields are normalised. The API mounts, the admin API and the provider's sign-in pages are each one.
 */
export function mountRouteContext (fastify: FastifyInstance, mount: Mount): RouteContext {
  const context = routeContextFor(fastify, mount)
  fastify.decorate('routeContext', context)
  fastify.decorateRequest('accessClaims', null)
  fastify.addHook('onRequest', noStore)
  if (mount.variant === 'cookie') fastify.addHook('onRequest', refuseCrossSiteRequests(mount.config.allowedOrigins))
  fastify.addHook('onRoute', normalizeBodies)
  return context
}

function routeContextFor (fastify: FastifyInstance, { variant, prefix, config }: Mount): RouteContext {
  const transport = transportFor(variant, {
    prefix,
    secure: config.cookieSecure,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds
  })
  const { store } = fastify
  return {
    variant,
    mountPrefix: prefix,
    config,
    transport,
    rateLimit: config.rateLimit,
    signedIn: requireAccessToken(transport, fastify.accessTokens, fastify.revocations, store),
    actorOf: async (request) => ({ user: await signedInUser(store, request), sessionId: claimsOf(request).sessionId, client: clientOf(request) })
  }
}

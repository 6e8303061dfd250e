import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { Config, Variant } from '../core/config.js'
import { normalizeUserFields } from '../core/schemas/common.js'
import accountRoutes from './auth/account.js'
import appsRoutes from './auth/apps.js'
import emailRoutes from './auth/email.js'
import authRoutes from './auth/index.js'
import mfaRoutes from './auth/mfa.js'
import passkeyRoutes from './auth/passkeys.js'
import oidcRoutes from './auth/oidc.js'
import passwordRoutes from './auth/password.js'
import { routeContextFor } from './context.js'
import { refuseCrossSiteRequests } from './guards.js'
import userRoutes from './users/index.js'

export interface ApiOptions {
  variant: Variant
  /** Where this variant is mounted ('' for the root); also scopes its cookies. */
  prefix: string
  config: Config
}

function normalizeBody (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  normalizeUserFields(request.body)
  done()
}

/** Set in onRequest, before any other hook may answer (a limit, a guard), so errors carry it too. */
function noStore (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  reply.header('cache-control', 'no-store')
  done()
}

const VARIANT_TAGS: Record<Variant, string> = { header: 'header variant (A)', cookie: 'cookie variant (B)' }

/**
 * The interface of the seed in one variant. Register it once per mounted
 * variant; encapsulation keeps each variant's transport and hooks to itself, so
 * one process can serve both under two prefixes over one store.
 */
const api: FastifyPluginAsyncTypebox<ApiOptions> = async (fastify, { variant, prefix, config }) => {
  // One context per mounted variant (routes/context.ts): every route plugin below reads it.
  fastify.decorate('routeContext', routeContextFor(fastify, variant, prefix, config))
  fastify.decorateRequest('accessClaims', null)
  // The OpenAPI document lists every mounted variant; its tag tells them apart.
  fastify.addHook('onRoute', (route) => { route.schema = { ...route.schema, tags: [VARIANT_TAGS[variant]] } })
  // Trim names and lower-case the email before the schemas judge them: on the routes that take a body
  // only, and synchronously (a hook on every route, as an async function, cost each GET a promise).
  fastify.addHook('onRoute', (route) => {
    if (route.schema?.body === undefined) return
    const existing = route.preValidation
    route.preValidation = [normalizeBody, ...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing])]
  })
  if (variant === 'cookie') fastify.addHook('onRequest', refuseCrossSiteRequests(config.allowedOrigins))

  // Every answer of /auth and /users may carry a token or personal data: no cache (browser, proxy) may keep it.
  await fastify.register(async (personal) => {
    personal.addHook('onRequest', noStore)
    await personal.register(authRoutes, { prefix: '/auth' })
    await personal.register(passwordRoutes, { prefix: '/auth' })
    await personal.register(emailRoutes, { prefix: '/auth' })
    await personal.register(accountRoutes, { prefix: '/auth' })
    await personal.register(passkeyRoutes, { prefix: '/auth' })
    await personal.register(mfaRoutes, { prefix: '/auth' })
    await personal.register(oidcRoutes, { prefix: '/auth' })
    await personal.register(appsRoutes, { prefix: '/auth' })
    await personal.register(userRoutes, { prefix: '/users' })
  })
}

export default api

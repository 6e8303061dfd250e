import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config, Variant } from '../src/config.js'
import { normalizeUserFields } from '../src/schemas/common.js'
import accountRoutes from './auth/account.js'
import emailRoutes from './auth/email.js'
import authRoutes from './auth/index.js'
import demoRoutes from './demo/index.js'
import passwordRoutes from './auth/password.js'
import { refuseCrossSiteRequests } from './guards.js'
import { transportFor } from './transport.js'
import userRoutes from './users/index.js'

export interface ApiOptions {
  variant: Variant
  /** Where this variant is mounted ('' for the root); also scopes its cookies. */
  prefix: string
  config: Config
}

const VARIANT_TAGS: Record<Variant, string> = { header: 'header variant (A)', cookie: 'cookie variant (B)' }

/**
 * The interface of the seed in one variant. Register it once per mounted
 * variant; encapsulation keeps each variant's transport and hooks to itself, so
 * one process can serve both under two prefixes over one store.
 */
const api: FastifyPluginAsyncTypebox<ApiOptions> = async (fastify, { variant, prefix, config }) => {
  const transport = transportFor(variant, {
    prefix,
    secure: config.cookieSecure,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds
  })
  fastify.decorateRequest('accessClaims', null)
  // The OpenAPI document lists every mounted variant; its tag tells them apart.
  fastify.addHook('onRoute', (route) => { route.schema = { ...route.schema, tags: [VARIANT_TAGS[variant]] } })
  // Trim names and lower-case the email before the schemas judge them.
  fastify.addHook('preValidation', async (request) => { normalizeUserFields(request.body) })
  if (variant === 'cookie') fastify.addHook('onRequest', refuseCrossSiteRequests(config.allowedOrigins))

  await fastify.register(authRoutes, { prefix: '/auth', variant, transport, rateLimit: config.rateLimit, requireEmailVerification: config.requireEmailVerification })
  await fastify.register(passwordRoutes, { prefix: '/auth', transport, rateLimit: config.rateLimit })
  await fastify.register(emailRoutes, { prefix: '/auth', transport, rateLimit: config.rateLimit })
  await fastify.register(accountRoutes, { prefix: '/auth', variant, transport })
  await fastify.register(userRoutes, { prefix: '/users', variant, transport })
  if (variant === 'cookie' && config.demo) await fastify.register(demoRoutes, { prefix: '/demo' })
}

export default api

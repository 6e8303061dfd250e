import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Variant } from '../core/config.js'
import accountRoutes from './auth/account.js'
import appsRoutes from './auth/apps.js'
import emailRoutes from './auth/email.js'
import emailCodeRoutes from './auth/email-code.js'
import authRoutes from './auth/index.js'
import mfaRoutes from './auth/mfa.js'
import passkeyRoutes from './auth/passkeys.js'
import oidcRoutes from './auth/oidc.js'
import passwordRoutes from './auth/password.js'
import { mountRouteContext, type Mount } from './context.js'
import invitationRoutes from './invitations/index.js'
import orgRoutes from './orgs/index.js'
import userRoutes from './users/index.js'

export type ApiOptions = Mount

const VARIANT_TAGS: Record<Variant, string> = { header: 'header variant (A)', cookie: 'cookie variant (B)' }

/**
 * The interface of the seed in one variant. Register it once per mounted
 * variant; encapsulation keeps each variant's transport and hooks to itself, so
 * one process can serve both under two prefixes over one store.
 */
const api: FastifyPluginAsyncTypebox<ApiOptions> = async (fastify, { variant, prefix, config }) => {
  // The variant's route context and hooks (routes/context.ts): every answer of /auth and /users may carry a
  // token or personal data, so none is cached; the cookie variant refuses cross-site changes.
  mountRouteContext(fastify, { variant, prefix, config })
  // The OpenAPI document lists every mounted variant; its tag tells them apart.
  fastify.addHook('onRoute', (route) => { route.schema = { ...route.schema, tags: [VARIANT_TAGS[variant]] } })

  await fastify.register(authRoutes, { prefix: '/auth' })
  await fastify.register(passwordRoutes, { prefix: '/auth' })
  await fastify.register(emailRoutes, { prefix: '/auth' })
  // EMAIL_CODE_LOGIN off: neither route exists (404, and not in the OpenAPI document).
  if (config.emailCodeLogin) await fastify.register(emailCodeRoutes, { prefix: '/auth', signUp: config.emailCodeSignup })
  await fastify.register(accountRoutes, { prefix: '/auth' })
  await fastify.register(passkeyRoutes, { prefix: '/auth' })
  await fastify.register(mfaRoutes, { prefix: '/auth' })
  await fastify.register(oidcRoutes, { prefix: '/auth' })
  await fastify.register(appsRoutes, { prefix: '/auth' })
  await fastify.register(userRoutes, { prefix: '/users' })
  await fastify.register(orgRoutes, { prefix: '/orgs' })
  await fastify.register(invitationRoutes, { prefix: '/invitations' })
}

export default api

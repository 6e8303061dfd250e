import { STATUS_CODES } from 'node:http'
import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifySchema } from 'fastify'
import fp from 'fastify-plugin'
import { VERSION } from '../../core/version.js'

const DESCRIPTION = `User accounts and tokens. Two variants of one interface may be mounted:
**header** (tokens in \`Authorization: Bearer\` and \`X-Refresh-Token: Bearer\`) and
**cookie** (tokens in the HttpOnly cookies \`accessToken\` and \`refreshToken\`).
Each operation is tagged with its variant. Every error has one body:
\`{statusCode, code, error, message}\`, where \`code\` is stable.`

/** The ways tokens travel, as OpenAPI security schemes; each operation lists those it needs. */
export const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'Header variant (A): the access token, `Authorization: Bearer <access token>`'
  },
  refreshTokenHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Refresh-Token',
    description: 'Header variant (A): the refresh token, `X-Refresh-Token: Bearer <refresh token>`'
  },
  accessTokenCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'accessToken',
    description: 'Cookie variant (B): the HttpOnly access-token cookie that login sets'
  },
  refreshTokenCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'refreshToken',
    description: 'Cookie variant (B): the HttpOnly refresh-token cookie that login sets (sent only to the /auth routes)'
  },
  adminBearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'Admin API, where the pages\' API is the header variant: the access token of an admin\'s session, `Authorization: Bearer <access token>`'
  },
  adminAccessTokenCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'accessToken',
    description: 'Admin API, where the pages\' API is the cookie variant: the access-token cookie of an admin\'s session'
  }
} as const

/**
 * OpenAPI 3.1 built from the routes' own TypeBox schemas, served at
 * GET /openapi.json, and Swagger UI at /docs. Registered before the routes so
 * its onRoute hook sees every one. The UI's assets are served from this
 * origin (no CDN), so a strict Content-Security-Policy keeps it working.
 */
export default fp(async (fastify) => {
  await fastify.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'account-service', version: VERSION, description: DESCRIPTION },
      // What each operation's `security` (routes/transport.ts) names: how a client sends its tokens in each variant.
      components: { securitySchemes: SECURITY_SCHEMES }
    },
    // Name each response by its status ("Unauthorized") rather than "Default Response".
    transform: ({ schema, url }) => ({ schema: describeResponses(schema), url })
  })
  // staticCSP: the UI's routes send their own CSP (its assets, by hash), in place of the API's default-src 'none'.
  await fastify.register(fastifySwaggerUi, { routePrefix: '/docs', staticCSP: true })

  fastify.get('/openapi.json', { schema: { hide: true } }, async () => fastify.swagger())
}, { name: 'swagger' })

function describeResponses (schema: FastifySchema | undefined): FastifySchema {
  if (schema?.response === undefined) return schema ?? {}
  const responses = schema.response as Record<string, { description?: string }>
  // Copies: the route schemas are shared TypeBox objects that the validator and serializer use too.
  const response = Object.fromEntries(Object.entries(responses).map(([status, body]) =>
    [status, body.description === undefined ? { ...body, description: STATUS_CODES[status] ?? status } : body]))
  return { ...schema, response }
}

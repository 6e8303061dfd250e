import type { FastifyReply } from 'fastify'

/*
 * Public documents that carry no credential and read none (the JWKS, the status lists, and discovery,
 * which oidc-provider answers: core/oauth/public-documents.ts): any origin may read them, as `*`, never
 * with credentials, so a browser app verifies a signature without ALLOWED_ORIGINS, which would open
 * the cookie API to it too. Nothing else opens.
 */

/**
 * The route config of a public document: ALLOWED_ORIGINS' CORS (@fastify/cors) stays off it, which
 * would answer a listed origin with its own name and credentials allowed.
 */
export const PUBLIC_DOCUMENT_CONFIG = { cors: false }

/** Any origin may read the answer (and embed it: Cross-Origin-Resource-Policy). */
export function answerAnyOrigin (reply: FastifyReply): FastifyReply {
  return reply.header('access-control-allow-origin', '*').header('cross-origin-resource-policy', 'cross-origin')
}

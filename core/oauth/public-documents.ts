import type { KoaContextWithOIDC } from 'oidc-provider'

/**
 * Discovery is a public, credential-less document, like the JWKS and the status lists (routes/public-documents.ts):
 * any origin may read it, as `*` rather than oidc-provider's echo of the Origin, and never with credentials,
 * which ALLOWED_ORIGINS' CORS (@fastify/cors, before the request reaches the provider) would allow a listed origin.
 */
export async function discoveryForAnyOrigin (ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next()
  if (ctx.oidc?.route !== 'discovery' && ctx.oidc?.route !== 'cors.discovery') return
  ctx.set('access-control-allow-origin', '*')
  ctx.remove('access-control-allow-credentials')
}

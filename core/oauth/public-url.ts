import type { KoaContextWithOIDC } from 'oidc-provider'

/**
 * Every URL the provider builds (discovery's endpoints, the device flow's verification URI, redirects,
 * the `secure` of its cookies) starts from Koa's view of the request's origin. This middleware, the
 * provider's first, pins that view to PUBLIC_URL, as Keycloak's `hostname` setting pins it: a Host or
 * X-Forwarded-Host/-Proto header (behind TRUST_PROXY too) cannot put another host into a document a
 * cache may keep. The client's address is still read from the proxy's headers where they are trusted.
 */
export function pinToPublicUrl (publicUrl: string): (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void> {
  const pinned = new URL(publicUrl)
  const protocol = pinned.protocol.slice(0, -1)
  const hostname = pinned.hostname.replace(/^\[|\]$/g, '')
  return async function pinnedToPublicUrl (ctx, next) {
    Object.defineProperties(ctx.request, {
      protocol: { value: protocol },
      host: { value: pinned.host },
      hostname: { value: hostname },
      // An absolute-form request target ("GET http://evil.example/…") is Koa's href as it came: its path only.
      href: {
        get () {
          const { pathname, search } = new URL(ctx.originalUrl, pinned)
          return `${protocol}://${pinned.host}${pathname}${search}`
        }
      }
    })
    await next()
  }
}

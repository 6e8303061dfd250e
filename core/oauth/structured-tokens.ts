import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose'
import type { KoaContextWithOIDC } from 'oidc-provider'
import type { AccessTokens } from '../tokens/access-tokens.js'
import type { StatusClaim } from '../revocations/status-lists.js'
import type { ClientTokenStatus } from './client-token-status.js'
import type { GrantSessions } from './grant-sessions.js'

/*
 * Apps' access tokens are JWTs (RFC 9068), which oidc-provider does not store: its userinfo endpoint
 * takes only the opaque tokens it stores, and its introspection and revocation endpoints answer
 * `unsupported_token_type` for a JWT. This middleware lets oidc-provider do all it does (parse the
 * request, authenticate the client) and answers those three cases itself, after it: the token's
 * signature, issuer, audience, type and expiry are checked, and its grant must still hold (a revoked
 * grant or an ended user is the status list's bit, the same fact). Revoking one revokes its grant; a
 * client-credentials token, which has none, has a status entry of its own (core/oauth/client-token-status.ts).
 */

/** The claims of an app's access token as the provider signs them (core/oauth/provider.ts). */
export interface AppTokenClaims extends JWTPayload {
  sub: string
  client_id: string
  scope?: string
  grant_id?: string
  status?: StatusClaim
}

export interface StructuredTokenDependencies {
  accessTokens: Pick<AccessTokens, 'jwks'>
  grantSessions: Pick<GrantSessions, 'isLive'>
  /** Client-credentials tokens' own status entries: whether one is revoked, and revoking it. */
  clientTokens: Pick<ClientTokenStatus, 'isLive' | 'revoke'>
  /** The userinfo claims of a user for these scopes; undefined when the user is gone. */
  userinfo (sub: string, scopes: Set<string>): Promise<Record<string, unknown> | undefined>
  /** Ends a grant: its session, its refresh tokens and codes. */
  revokeGrant (grantId: string): Promise<void>
  issuer: string
  /** The userinfo endpoint's path (core/oauth/provider.ts OAUTH_ROUTES). */
  userinfoPath: string
}

type Middleware = (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void>

export function structuredTokens (deps: StructuredTokenDependencies): Middleware {
  const { userinfoPath } = deps
  let keySet: { kids: string, set: ReturnType<typeof createLocalJWKSet> } | undefined

  /** The token's claims when it is an app's access token of ours, unexpired, of a grant that still holds. */
  async function verified (token: unknown): Promise<AppTokenClaims | undefined> {
    if (typeof token !== 'string' || token.split('.').length !== 3) return undefined
    const { jwks } = deps.accessTokens
    const kids = jwks.keys.map(key => key.kid).join(' ')
    if (keySet?.kids !== kids) keySet = { kids, set: createLocalJWKSet(jwks as Parameters<typeof createLocalJWKSet>[0]) }
    try {
      const { payload } = await jwtVerify<AppTokenClaims>(token, keySet.set, {
        issuer: deps.issuer,
        audience: deps.issuer,
        typ: 'at+jwt',
        algorithms: ['EdDSA', 'ES256'],
        requiredClaims: ['sub', 'client_id', 'exp', 'iat', 'jti']
      })
      if (payload.grant_id !== undefined && !await deps.grantSessions.isLive(payload.grant_id)) return undefined
      // A client-credentials token (no grant) with a status entry of its own: that entry must not be revoked.
      if (payload.grant_id === undefined && payload.status !== undefined && !await deps.clientTokens.isLive({ jti: String(payload.jti), status: payload.status })) return undefined
      return payload
    } catch {
      return undefined
    }
  }

  const bearerOf = (ctx: KoaContextWithOIDC) => {
    const header = ctx.get('authorization')
    return header.startsWith('Bearer ') ? header.slice(7) : (ctx.oidc?.params?.access_token as string | undefined)
  }

  /** Userinfo's claims for an app's JWT; undefined when the token is not good for userinfo. */
  async function userinfoOf (token: string | undefined): Promise<Record<string, unknown> | undefined> {
    const claims = await verified(token)
    // Only a user's token (of a grant) is good for userinfo: a client-credentials token has no user behind it.
    if (claims?.grant_id === undefined) return undefined
    const scopes = new Set((claims.scope ?? '').split(' '))
    if (!scopes.has('openid')) return undefined
    return await deps.userinfo(claims.sub, scopes)
  }

  return async function answerStructuredTokens (ctx, next) {
    // The common case first: a server-side app's GET with its JWT in the header is answered here, before
    // oidc-provider looks the JWT up as an opaque token and builds the error it would answer. A browser's
    // call (Origin: CORS per client) and anything else goes through oidc-provider.
    if (ctx.method === 'GET' && ctx.path === userinfoPath && ctx.get('origin') === '' && ctx.get('authorization').startsWith('Bearer ')) {
      const userinfo = await userinfoOf(bearerOf(ctx))
      if (userinfo !== undefined) {
        ctx.set('cache-control', 'no-store')
        ctx.body = userinfo
        return
      }
    }
    await next()
    const route = ctx.oidc?.route
    const body = ctx.body as { error?: string } | undefined
    if (route === 'userinfo' && ctx.status === 401) {
      const userinfo = await userinfoOf(bearerOf(ctx))
      if (userinfo === undefined) return
      ctx.remove('www-authenticate')
      ctx.status = 200
      ctx.body = userinfo
      return
    }
    if ((route !== 'introspection' && route !== 'revocation') || body?.error !== 'unsupported_token_type') return
    const client = ctx.oidc.client
    if (client === undefined) return
    const claims = await verified(ctx.oidc.params?.token)
    // A client learns of, and revokes, only its own tokens; anything else is "not active" (RFC 7662, 7009).
    const own = claims !== undefined && claims.client_id === client.clientId ? claims : undefined
    if (route === 'revocation' && claims !== undefined && own === undefined && client.clientAuthMethod !== 'none') {
      // Another client's token, named by an authenticated client: refused, as for the provider's own tokens (RFC 7009 §2.1).
      ctx.status = 400
      ctx.body = { error: 'unauthorized_client', error_description: 'the token was not issued to this client' }
      return
    }
    ctx.status = 200
    if (route === 'revocation') {
      if (own?.grant_id !== undefined) await deps.revokeGrant(own.grant_id)
      else if (own?.status !== undefined) await deps.clientTokens.revoke({ jti: String(own.jti), status: own.status })
      ctx.body = ''
      return
    }
    ctx.body = own === undefined || client.clientAuthMethod === 'none'
      ? { active: false }
      : {
          active: true,
          token_type: 'Bearer',
          client_id: own.client_id,
          sub: own.sub,
          scope: own.scope,
          exp: own.exp,
          iat: own.iat,
          iss: own.iss,
          aud: own.aud,
          jti: own.jti
        }
  }
}

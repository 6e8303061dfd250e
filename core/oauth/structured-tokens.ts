import { calculateJwkThumbprint, createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose'
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
 * A token bound to a DPoP key (RFC 9449, `cnf.jkt`) is taken at userinfo only with the DPoP scheme and a
 * proof of that key, and introspection names the binding.
 */

/** The claims of an app's access token as the provider signs them (core/oauth/provider.ts). */
export interface AppTokenClaims extends JWTPayload {
  sub: string
  client_id: string
  scope?: string
  grant_id?: string
  status?: StatusClaim
  /** The DPoP key the token is bound to (RFC 9449 §6.1): its JWK thumbprint. */
  cnf?: { jkt?: string }
}

/** How long a DPoP proof's jti is remembered: oidc-provider takes a proof this long after its iat (or its nonce's). */
const PROOF_REPLAY_WINDOW_SECONDS = 300

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

  /**
   * The token's claims when it is an app's access token of ours, unexpired, of a grant that still holds;
   * for `audience` (userinfo: the issuer) only, else for any resource it was issued for.
   */
  async function verified (token: unknown, audience?: string): Promise<AppTokenClaims | undefined> {
    if (typeof token !== 'string' || token.split('.').length !== 3) return undefined
    const { jwks } = deps.accessTokens
    const kids = jwks.keys.map(key => key.kid).join(' ')
    if (keySet?.kids !== kids) keySet = { kids, set: createLocalJWKSet(jwks as Parameters<typeof createLocalJWKSet>[0]) }
    try {
      const { payload } = await jwtVerify<AppTokenClaims>(token, keySet.set, {
        issuer: deps.issuer,
        audience,
        typ: 'at+jwt',
        algorithms: ['EdDSA', 'ES256'],
        requiredClaims: ['sub', 'client_id', 'exp', 'iat', 'jti', 'aud']
      })
      if (payload.grant_id !== undefined && !await deps.grantSessions.isLive(payload.grant_id)) return undefined
      // A client-credentials token (no grant) with a status entry of its own: that entry must not be revoked.
      if (payload.grant_id === undefined && payload.status !== undefined && !await deps.clientTokens.isLive({ jti: String(payload.jti), status: payload.status })) return undefined
      return payload
    } catch {
      return undefined
    }
  }

  /** The access token a userinfo request presents, and whether with the DPoP scheme (else Bearer: the header's, or the form's access_token). */
  function presented (ctx: KoaContextWithOIDC): { token: string | undefined, dpop: boolean } {
    const header = ctx.get('authorization')
    if (/^dpop /i.test(header)) return { token: header.slice(5), dpop: true }
    if (/^bearer /i.test(header)) return { token: header.slice(7), dpop: false }
    return { token: ctx.oidc?.params?.access_token as string | undefined, dpop: false }
  }

  /**
   * Why userinfo must refuse the token as presented (RFC 9449 §7.1), or undefined. A token bound to a key
   * comes with the DPoP scheme and a proof of that key; a proof with a token bound to none proves nothing.
   * oidc-provider's userinfo checked the proof before it looked the token up (its signature, htm, htu, ath,
   * its age or nonce) and refuses a DPoP scheme without one: a DPoP request reaches this with the provider's
   * invalid_token only when its proof was good. Left: whose key signed it, and whether it was used before.
   */
  async function bindingRefusal (ctx: KoaContextWithOIDC, claims: AppTokenClaims, dpop: boolean): Promise<string | undefined> {
    const jkt = claims.cnf?.jkt
    if (!dpop) return jkt === undefined ? undefined : 'the access token is bound to a DPoP key: present it with the DPoP scheme and a proof'
    if (jkt === undefined) return 'the access token is not bound to a DPoP key'
    const proof = ctx.get('dpop')
    try {
      const { jwk } = decodeProtectedHeader(proof)
      if (jwk === undefined || await calculateJwkThumbprint(jwk) !== jkt) return 'the DPoP proof is not signed by the key the access token is bound to'
      const { jti } = decodeJwt(proof)
      const fresh = await ctx.oidc.provider.ReplayDetection.unique(claims.client_id, String(jti), Math.floor(Date.now() / 1000) + PROOF_REPLAY_WINDOW_SECONDS)
      return fresh ? undefined : 'the DPoP proof was used before'
    } catch {
      return 'invalid DPoP proof'
    }
  }

  /** A 401 naming the DPoP scheme, as RFC 9449 §7.1 has a resource server answer. */
  function refuse (ctx: KoaContextWithOIDC, description: string): void {
    ctx.status = 401
    ctx.body = { error: 'invalid_token', error_description: description }
    ctx.set('www-authenticate', `DPoP realm="${deps.issuer}", error="invalid_token", error_description="${description}"`)
  }

  /** Userinfo's claims for an app's verified JWT; undefined when the token is not good for userinfo. */
  async function userinfoOf (claims: AppTokenClaims): Promise<Record<string, unknown> | undefined> {
    // Only a user's token (of a grant) is good for userinfo: a client-credentials token has no user behind it.
    if (claims.grant_id === undefined) return undefined
    const scopes = new Set((claims.scope ?? '').split(' '))
    if (!scopes.has('openid')) return undefined
    return await deps.userinfo(claims.sub, scopes)
  }

  return async function answerStructuredTokens (ctx, next) {
    // The common case first: a server-side app's GET with its JWT in the header is answered here, before
    // oidc-provider looks the JWT up as an opaque token and builds the error it would answer. A browser's
    // call (Origin: CORS per client), a DPoP request and anything else goes through oidc-provider.
    if (ctx.method === 'GET' && ctx.path === userinfoPath && ctx.get('origin') === '' && ctx.get('dpop') === '' && ctx.get('authorization').startsWith('Bearer ')) {
      const claims = await verified(ctx.get('authorization').slice(7), deps.issuer)
      const userinfo = claims === undefined || claims.cnf !== undefined ? undefined : await userinfoOf(claims)
      if (userinfo !== undefined) {
        ctx.set('cache-control', 'no-store')
        ctx.body = userinfo
        return
      }
    }
    await next()
    const route = ctx.oidc?.route
    const body = ctx.body as { error?: string } | undefined
    // oidc-provider's invalid_token: it did not find the token (it stores none of these); its other errors stand.
    if (route === 'userinfo' && ctx.status === 401 && body?.error === 'invalid_token') {
      const { token, dpop } = presented(ctx)
      const claims = await verified(token, deps.issuer)
      if (claims === undefined) return
      const refusal = await bindingRefusal(ctx, claims, dpop)
      if (refusal !== undefined) return refuse(ctx, refusal)
      const userinfo = await userinfoOf(claims)
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
    const jkt = own?.cnf?.jkt
    ctx.body = own === undefined || client.clientAuthMethod === 'none'
      ? { active: false }
      : {
          active: true,
          // RFC 9449 §6.2: a bound token's type and key.
          token_type: jkt === undefined ? 'Bearer' : 'DPoP',
          ...(jkt === undefined ? {} : { cnf: { jkt } }),
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

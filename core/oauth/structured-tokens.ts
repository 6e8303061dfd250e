import type { KoaContextWithOIDC } from 'oidc-provider'
import type { AppTokenPayload, AppTokenVerifier } from '../tokens/access-tokens.js'
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
 * The checks of a token are appTokenChecks, the one place that says whether a token holds: this
 * middleware and the userinfo route of routes/oauth (the common case, served without the provider) call it.
 */

/** The claims of an app's access token as the provider signs them (core/oauth/provider.ts). */
export type AppTokenClaims = AppTokenPayload & { status?: StatusClaim }

export interface AppTokenCheckDependencies {
  /** The verifier of the service's signing keys for app tokens (core/tokens/access-tokens.ts appTokenVerifier). */
  appTokens: AppTokenVerifier
  grantSessions: Pick<GrantSessions, 'isLive' | 'knownLive'>
  /** Client-credentials tokens' own status entries: whether one is revoked, and revoking it. */
  clientTokens: Pick<ClientTokenStatus, 'isLive' | 'revoke'>
  /** The userinfo claims of a user for these scopes; undefined when the user is gone. */
  userinfo (sub: string, scopes: Set<string>): Promise<Record<string, unknown> | undefined>
  /** userinfo where memory alone answers it (the user cache); else undefined. */
  knownUserinfo (sub: string, scopes: Set<string>): Record<string, unknown> | undefined
}

export interface AppTokenChecks {
  /** The token's claims when it is an app's access token of ours, unexpired, of a grant (or client token) that still holds. */
  verified (token: unknown): Promise<AppTokenClaims | undefined>
  /** Userinfo's claims for an app's token; undefined when the token is not good for userinfo. */
  userinfoOf (token: string | undefined): Promise<Record<string, unknown> | undefined>
  /**
   * userinfoOf where memory alone answers (a token verified before, its grant and its user known): the
   * common case, without a promise. Undefined otherwise, and for a sender-constrained token (cnf), which
   * only userinfoOf's checks may pass.
   */
  knownUserinfoOf (token: string): Record<string, unknown> | undefined
}

/** Whether an app's token holds, and what userinfo answers for it: the one place both userinfo paths ask. */
export function appTokenChecks (deps: AppTokenCheckDependencies): AppTokenChecks {
  async function verified (token: unknown): Promise<AppTokenClaims | undefined> {
    if (typeof token !== 'string' || token.split('.').length !== 3) return undefined
    try {
      const payload: AppTokenClaims = await deps.appTokens.verify(token)
      if (typeof payload.jti !== 'string' || (payload.grant_id !== undefined && typeof payload.grant_id !== 'string')) return undefined
      if (payload.grant_id !== undefined && !await deps.grantSessions.isLive(payload.grant_id)) return undefined
      // A client-credentials token (no grant) with a status entry of its own: that entry must not be revoked.
      if (payload.grant_id === undefined && payload.status !== undefined && !await deps.clientTokens.isLive({ jti: payload.jti, status: payload.status })) return undefined
      return payload
    } catch {
      return undefined
    }
  }

  async function userinfoOf (token: string | undefined): Promise<Record<string, unknown> | undefined> {
    const claims = await verified(token)
    // Only a user's token (of a grant) is good for userinfo: a client-credentials token has no user behind it.
    if (claims?.grant_id === undefined) return undefined
    const scopes = new Set((claims.scope ?? '').split(' '))
    if (!scopes.has('openid')) return undefined
    return await deps.userinfo(claims.sub, scopes)
  }

  function knownUserinfoOf (token: string): Record<string, unknown> | undefined {
    const claims: AppTokenClaims | undefined = deps.appTokens.verifiedBefore(token)
    if (typeof claims?.grant_id !== 'string' || claims.cnf !== undefined || deps.grantSessions.knownLive(claims.grant_id) !== true) return undefined
    const scopes = new Set((claims.scope ?? '').split(' '))
    return scopes.has('openid') ? deps.knownUserinfo(claims.sub, scopes) : undefined
  }

  return { verified, userinfoOf, knownUserinfoOf }
}

export interface StructuredTokenDependencies {
  checks: AppTokenChecks
  /** Client-credentials tokens' own status entries: revoking one. */
  clientTokens: Pick<ClientTokenStatus, 'revoke'>
  /** Ends a grant: its session, its refresh tokens and codes. */
  revokeGrant (grantId: string): Promise<void>
}

type Middleware = (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void>

export function structuredTokens (deps: StructuredTokenDependencies): Middleware {
  const { verified, userinfoOf } = deps.checks

  const bearerOf = (ctx: KoaContextWithOIDC) => {
    const header = ctx.get('authorization')
    return header.startsWith('Bearer ') ? header.slice(7) : (ctx.oidc?.params?.access_token as string | undefined)
  }

  // The common case, a server-side app's call with its JWT in the header, is answered before the provider
  // (routes/oauth/index.ts); what reaches it here (a browser's call, answered with the client's CORS; a
  // token in the form; a token that does not hold) is answered after oidc-provider's own userinfo.
  return async function answerStructuredTokens (ctx, next) {
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

import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader } from 'jose'
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
 * A token bound to a DPoP key (RFC 9449, `cnf.jkt`) is taken at userinfo only with the DPoP scheme and a
 * proof of that key, and introspection names the binding.
 * The checks of a token are appTokenChecks, the one place that says whether a token holds: this
 * middleware and the userinfo route of routes/oauth (the common case, served without the provider) call it.
 */

/** The claims of an app's access token as the provider signs them (core/oauth/provider.ts). */
export type AppTokenClaims = AppTokenPayload & {
  status?: StatusClaim
  /** The DPoP key the token is bound to (RFC 9449 §6.1): its JWK thumbprint. */
  cnf?: { jkt?: string }
}

/** How long a DPoP proof's jti is remembered: oidc-provider takes a proof this long after its iat (or its nonce's). */
const PROOF_REPLAY_WINDOW_SECONDS = 300

export interface AppTokenCheckDependencies {
  /** The verifier of the service's signing keys for app tokens (core/tokens/access-tokens.ts appTokenVerifier). */
  appTokens: AppTokenVerifier
  grantSessions: Pick<GrantSessions, 'isLive' | 'knownLive'>
  /** Client-credentials tokens' own status entries: whether one is revoked. */
  clientTokens: Pick<ClientTokenStatus, 'isLive'>
  /** The userinfo claims of a user for these scopes; undefined when the user is gone. */
  userinfo (sub: string, scopes: Set<string>): Promise<Record<string, unknown> | undefined>
  /**
   * userinfo where memory alone answers it (the user cache); else undefined. The same `scopes` set comes with
   * every request of one token (and is never changed): an answer may be kept by it.
   */
  knownUserinfo (sub: string, scopes: ReadonlySet<string>): Record<string, unknown> | undefined
  /** The issuer (PUBLIC_URL): the audience of a token good for userinfo. */
  issuer: string
}

export interface AppTokenChecks {
  /**
   * The token's claims when it is an app's access token of ours, unexpired, of a grant (or client token)
   * that still holds; for `audience` (userinfo: the issuer) only, else for any resource it was issued for.
   */
  verified (token: unknown, audience?: string): Promise<AppTokenClaims | undefined>
  /** Userinfo's claims for an app's verified token; undefined when the token is not good for userinfo. */
  userinfoOf (claims: AppTokenClaims): Promise<Record<string, unknown> | undefined>
  /**
   * Userinfo's claims for a token presented as `Bearer` without a DPoP proof; undefined when it is not good
   * for userinfo so presented (a token bound to a DPoP key among them: the provider's path refuses it).
   */
  bearerUserinfoOf (token: string): Promise<Record<string, unknown> | undefined>
  /**
   * bearerUserinfoOf where memory alone answers (a token verified before, its grant
   * and its user known): the common case, without a promise. Undefined otherwise, and for a
   * sender-constrained token (cnf), which only the provider's path with its DPoP checks may pass.
   */
  knownUserinfoOf (token: string): Record<string, unknown> | undefined
}

const hasAudience = (claims: AppTokenClaims, audience: string) => Array.isArray(claims.aud) ? claims.aud.includes(audience) : claims.aud === audience

/** Whether an app's token holds, and what userinfo answers for it: the one place both userinfo paths ask. */
export function appTokenChecks (deps: AppTokenCheckDependencies): AppTokenChecks {
  async function verified (token: unknown, audience?: string): Promise<AppTokenClaims | undefined> {
    if (typeof token !== 'string' || token.split('.').length !== 3) return undefined
    try {
      const payload: AppTokenClaims = await deps.appTokens.verify(token)
      if (audience !== undefined && !hasAudience(payload, audience)) return undefined
      if (typeof payload.jti !== 'string' || (payload.grant_id !== undefined && typeof payload.grant_id !== 'string')) return undefined
      if (payload.grant_id !== undefined && !await deps.grantSessions.isLive(payload.grant_id)) return undefined
      // A client-credentials token (no grant) with a status entry of its own: that entry must not be revoked.
      if (payload.grant_id === undefined && payload.status !== undefined && !await deps.clientTokens.isLive({ jti: payload.jti, status: payload.status })) return undefined
      return payload
    } catch {
      return undefined
    }
  }

  async function userinfoOf (claims: AppTokenClaims): Promise<Record<string, unknown> | undefined> {
    // Only a user's token (of a grant) is good for userinfo: a client-credentials token has no user behind it.
    if (claims.grant_id === undefined) return undefined
    const scopes = new Set((claims.scope ?? '').split(' '))
    if (!scopes.has('openid')) return undefined
    return await deps.userinfo(claims.sub, scopes)
  }

  /**
   * What knownUserinfoOf reads of a verified token's claims, kept with them: a verified token's claims are one
   * frozen object for as long as the verifier keeps it (core/tokens/token-verifier.ts), so its checks and its
   * scope set are made once, not at every request (issue 34). null: a token memory never answers.
   */
  const userinfoTokens = new WeakMap<AppTokenClaims, { grantId: string, sub: string, scopes: Set<string> } | null>()
  function userinfoTokenOf (claims: AppTokenClaims): { grantId: string, sub: string, scopes: Set<string> } | null {
    let known = userinfoTokens.get(claims)
    if (known === undefined) {
      const scopes = new Set((claims.scope ?? '').split(' '))
      known = typeof claims.grant_id !== 'string' || claims.cnf !== undefined || !hasAudience(claims, deps.issuer) || !scopes.has('openid')
        ? null
        : { grantId: claims.grant_id, sub: claims.sub, scopes }
      userinfoTokens.set(claims, known)
    }
    return known
  }

  function knownUserinfoOf (token: string): Record<string, unknown> | undefined {
    const claims: AppTokenClaims | undefined = deps.appTokens.verifiedBefore(token)
    const known = claims === undefined ? null : userinfoTokenOf(claims)
    if (known === null || deps.grantSessions.knownLive(known.grantId) !== true) return undefined
    return deps.knownUserinfo(known.sub, known.scopes)
  }

  async function bearerUserinfoOf (token: string): Promise<Record<string, unknown> | undefined> {
    const claims = await verified(token, deps.issuer)
    return claims === undefined || claims.cnf !== undefined ? undefined : await userinfoOf(claims)
  }

  return { verified, userinfoOf, bearerUserinfoOf, knownUserinfoOf }
}

export interface StructuredTokenDependencies {
  checks: AppTokenChecks
  /** Client-credentials tokens' own status entries: revoking one. */
  clientTokens: Pick<ClientTokenStatus, 'revoke'>
  /** Ends a grant: its session, its refresh tokens and codes. */
  revokeGrant (grantId: string): Promise<void>
  issuer: string
}

type Middleware = (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void>

export function structuredTokens (deps: StructuredTokenDependencies): Middleware {
  const { verified, userinfoOf } = deps.checks

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

  // The common case, a server-side app's GET with its JWT in the header, is answered before the provider
  // (routes/oauth/index.ts); what reaches it here (a browser's call, answered with the client's CORS; a
  // DPoP request; a token in the form; a token that does not hold) is answered after oidc-provider's own userinfo.
  return async function answerStructuredTokens (ctx, next) {
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
      else if (own?.status !== undefined) await deps.clientTokens.revoke({ jti: own.jti, status: own.status })
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

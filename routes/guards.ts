import type { FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from 'fastify'
import type { AccountStore, UserRecord } from '../db/store.js'
import type { Revocations } from '../core/revocations/revocations.js'
import type { AccessTokens, AccessTokenClaims } from '../core/tokens/access-tokens.js'
import { CrossSiteRequestError, ForbiddenError, MissingTokenError, SessionRevokedError, UserNotFoundError } from '../core/errors.js'
import type { TokenTransport } from './transport.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified access token's claims, set by requireAccessToken on the routes that need one. */
    accessClaims: AccessTokenClaims | null
  }
}

/**
 * onRequest hook: 401 unless the request carries a valid access token where its
 * variant expects it, of a session that is still live. Revocation is immediate:
 * after logout, a password change or reset, or a deleted session, the session's
 * access tokens are refused at once (401 SESSION_REVOKED). The revocation set
 * (core/revocations/revocations.ts) answers from memory while the log is followed, so
 * this reads nothing from the store; a session whose tokens are all gone was pruned
 * after revocation (401) or belonged to a deleted user (404 USER_NOT_FOUND).
 * A token verified before, of a session memory knows to be live, passes without a
 * promise: that is every request of a signed-in client but its first (issue 23).
 */
export function requireAccessToken (transport: TokenTransport, accessTokens: AccessTokens, revocations: Pick<Revocations, 'knownSessionState'>, store: Pick<AccountStore, 'sessionState' | 'findUserById'>): onRequestHookHandler {
  async function check (request: FastifyRequest, token: string): Promise<void> {
    const claims = await accessTokens.verify(token)
    const state = await store.sessionState(claims.sessionId, new Date(request.server.clock.now()))
    if (state === 'revoked') throw new SessionRevokedError()
    if (state === 'unknown') {
      // Its tokens are gone: pruned after revocation, or deleted with the user.
      if (await store.findUserById(claims.userId) === undefined) throw new UserNotFoundError()
      throw new SessionRevokedError()
    }
    request.accessClaims = claims
  }
  return function signedIn (request, _reply, done) {
    // A token verified before is looked up as sent: its text is a good token's, so the syntax check
    // (a regular expression over some 500 characters) is spared too.
    const sent = transport.accessTokenAsSent(request)
    const claims = sent === undefined ? undefined : accessTokens.verifiedBefore(sent)
    if (claims !== undefined && revocations.knownSessionState(claims.sessionId) === 'live') {
      request.accessClaims = claims
      done()
      return
    }
    const token = transport.readAccessToken(request)
    if (token === undefined) {
      done(new MissingTokenError(transport.accessTokenHint))
      return
    }
    check(request, token).then(() => { done() }, done)
  }
}

/** The caller's claims on a route guarded by requireAccessToken. */
export function claimsOf (request: FastifyRequest): AccessTokenClaims {
  if (request.accessClaims === null) throw new Error('route is missing the requireAccessToken guard')
  return request.accessClaims
}

/** The signed-in user of a guarded route; 404 USER_NOT_FOUND when it was deleted while its token lives. */
export async function signedInUser (store: Pick<AccountStore, 'findUserById'>, request: FastifyRequest): Promise<UserRecord> {
  const user = await store.findUserById(claimsOf(request).userId)
  if (user === undefined) throw new UserNotFoundError()
  return user
}

/** preHandler hook for /users/:userId: a user reads and updates only itself. */
export const requireSelf: preHandlerHookHandler = function requireSelf (request, _reply, done) {
  const { userId } = request.params as { userId: number }
  done(claimsOf(request).userId === userId ? undefined : new ForbiddenError())
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * onRequest hook of the cookie variant. Browsers attach cookies to cross-site
 * requests too, so a state-changing request that carries cookies must come from
 * our own origin (or one listed in ALLOWED_ORIGINS). Sec-Fetch-Site and Origin
 * are set by browsers and cannot be forged by page script; a request with
 * neither comes from a non-browser client and is served.
 */
export function refuseCrossSiteRequests (allowedOrigins: readonly string[]): onRequestHookHandler {
  const allowed = new Set(allowedOrigins)
  const crossSite = (request: FastifyRequest): boolean => {
    if (SAFE_METHODS.has(request.method) || request.headers.cookie === undefined) return false
    if (request.headers['sec-fetch-site'] === 'cross-site') return true
    const origin = request.headers.origin
    return origin !== undefined && origin !== `${request.protocol}://${request.host}` && !allowed.has(origin)
  }
  // Synchronous: an async hook costs every request a promise.
  return function refuseCrossSite (request, _reply, done) {
    done(crossSite(request) ? new CrossSiteRequestError() : undefined)
  }
}

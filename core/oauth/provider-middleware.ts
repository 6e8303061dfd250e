import { STATUS_CODES } from 'node:http'
import type { KoaContextWithOIDC } from 'oidc-provider'
import { RouteNotFoundError } from '../errors.js'
import { SERVICE_SESSION_FIELD, type ProviderSessions } from './provider-sessions.js'

/*
 * Two of the service's middlewares in oidc-provider's Koa stack (core/oauth/provider.ts installs them);
 * the others have files of their own (public-url.ts, public-documents.ts, provider-pages.ts,
 * endpoint-answers.ts, structured-tokens.ts).
 */

type Middleware = (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void>

/** A path or method the provider does not serve: 404 in the service's error shape, not Koa's plain "Not Found". */
export async function answerUnknownPaths (ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next()
  if (ctx.status !== 404 || ctx.body !== undefined) return
  const error = new RouteNotFoundError(ctx.method, ctx.path)
  ctx.status = 404
  ctx.body = { statusCode: 404, code: error.code, error: STATUS_CODES[404], message: error.message }
}

/**
 * After a resume whose sign-in names its service session (routes/oauth/interactions.ts), the saved
 * provider Session is bound to it, so it ends when that session does; after RP-initiated logout
 * signed the browser out of the provider, the bound service session ends too, so the next sign-in
 * asks for a credential rather than taking the service's leftover cookie.
 */
export function tieSessions (providerSessions: Pick<ProviderSessions, 'bind' | 'end'>): Middleware {
  return async function tieSessionsAfter (ctx, next) {
    await next()
    const session = ctx.oidc?.session
    if (session === undefined) return
    const route = ctx.oidc.route
    // oidc-provider marks a Session it destroyed (its session handler reads the mark; its types do not name it).
    const destroyed = (session as unknown as { destroyed?: boolean }).destroyed === true
    if (route === 'resume' || route === 'device_resume') {
      const result = ctx.oidc.result as (Record<string, unknown> & { login?: unknown }) | undefined
      const sessionId = result?.[SERVICE_SESSION_FIELD]
      if (result?.login === undefined || typeof sessionId !== 'string' || session.accountId === undefined || destroyed) return
      await providerSessions.bind(session.uid, { sessionId, accountId: session.accountId }, new Date(session.exp * 1000))
    } else if (route === 'end_session_confirm' && destroyed) {
      const requestId = ctx.get('x-request-id')
      await providerSessions.end(session.uid, { ip: ctx.ip, userAgent: ctx.get('user-agent').slice(0, 512) || null, requestId: requestId === '' ? null : requestId })
    }
  }
}

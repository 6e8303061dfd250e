import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

/**
 * The Content-Security-Policy of every route: this is a JSON API, so a
 * response may load, frame or submit nothing. A route that serves a page (the
 * docs or the demo) loosens it for itself with the route option
 * `onRequest: pageCsp(PAGE_CSP_DIRECTIVES)`.
 */
export const API_CSP_DIRECTIVES = {
  'default-src': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
  'frame-ancestors': ["'none'"]
}

/** The CSP of our own pages (the demo): their script, style and API calls come from our origin only, nothing inline. */
export const PAGE_CSP_DIRECTIVES = {
  ...API_CSP_DIRECTIVES,
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'form-action': ["'self'"]
}

type Directives = Record<string, string[]>

const HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: API_CSP_DIRECTIVES },
  // No answer of ours is meant to be shown in a frame (a page route may relax this like the CSP).
  frameguard: { action: 'deny' },
  // The headers of OWASP's REST Security Cheat Sheet stay (CSP, HSTS, nosniff, frame denial, referrer,
  // resource policy); these only matter to documents a browser renders, or to browsers long gone,
  // and would add ~200 bytes to every JSON answer.
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false
}

/**
 * The headers helmet sets with these options, read once at start: helmet's
 * middleware runs against a stand-in response that records them. The values
 * are helmet's own (none hand-copied); only the per-request work is gone.
 */
function helmetHeaders (options: HelmetOptions): Array<[string, string]> {
  const headers = new Map<string, string>()
  const response = {
    setHeader (name: string, value: string) { headers.set(name.toLowerCase(), String(value)) },
    removeHeader (name: string) { headers.delete(name.toLowerCase()) }
  }
  const middleware = helmet(options) as unknown as (request: object, response: object, next: (error?: unknown) => void) => void
  let failure: unknown
  middleware({ headers: {} }, response, (error) => { failure = error })
  if (failure !== undefined) throw failure
  return [...headers]
}

/** helmet's CSP header value for these directives (same serialization as every other header here). */
function cspValue (directives: Directives): string {
  return helmetHeaders({ ...HELMET_OPTIONS, contentSecurityPolicy: { useDefaults: false, directives } })
    .find(([name]) => name === 'content-security-policy')?.[1] ?? ''
}

/** A route-level onRequest hook that replaces the API's CSP by a page's (it runs after the global one). */
export function pageCsp (directives: Directives): onRequestHookHandler {
  const value = cspValue(directives)
  return function setPageCsp (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    reply.header('content-security-policy', value)
    done()
  }
}

/**
 * Security headers (helmet's values) on every answer, errors and 404s included.
 * They are computed once at start and set per request by one synchronous hook:
 * @fastify/helmet ran helmet's middleware chain on every request (about 5% of
 * an authenticated GET).
 */
export default fp(async (fastify) => {
  const headers = helmetHeaders(HELMET_OPTIONS)
  const names = headers.map(([name]) => name)
  const values = headers.map(([, value]) => value)
  fastify.addHook('onRequest', function securityHeaders (_request, reply, done) {
    for (let index = 0; index < names.length; index++) reply.header(names[index], values[index])
    done()
  })
}, { name: 'helmet' })

import fastifyHelmet from '@fastify/helmet'
import fp from 'fastify-plugin'

/**
 * The Content-Security-Policy of every route: this is a JSON API, so a
 * response may load, frame or submit nothing. A route that serves a page (the
 * docs or the demo) loosens it for itself with the route option
 * `helmet: { contentSecurityPolicy: { directives: { ...API_CSP_DIRECTIVES, 'script-src': ["'self'"] } } }`.
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

/** Security headers (@fastify/helmet) on every answer, errors and 404s included. */
export default fp(async (fastify) => {
  await fastify.register(fastifyHelmet, {
    global: true,
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
  })
}, { name: 'helmet' })

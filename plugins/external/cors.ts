import fastifyCors from '@fastify/cors'
import fp from 'fastify-plugin'

export interface CorsOptions {
  /** ALLOWED_ORIGINS: the only origins that get CORS headers. */
  allowedOrigins: readonly string[]
}

/** What a browser app on a listed origin may send: variant A's two token headers, and JSON. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'X-Refresh-Token', 'Content-Type']
/** What its script may read of an answer beyond the basics: when to retry a 429 or 503, and the request id to quote. */
export const CORS_EXPOSED_HEADERS = ['Retry-After', 'X-Request-Id']
/** How long a browser may keep a preflight's answer (Chromium keeps at most 2 hours). */
export const CORS_MAX_AGE_SECONDS = 600

/**
 * CORS for browser apps on the origins listed in ALLOWED_ORIGINS (@fastify/cors). A listed origin
 * gets its own origin back, with credentials (variant B's cookies) allowed; any other origin, and a
 * request without Origin, gets no CORS header at all, so its browser withholds the answer.
 * Registered only when ALLOWED_ORIGINS lists an origin: otherwise it costs no request anything.
 */
export default fp<CorsOptions>(async (fastify, { allowedOrigins }) => {
  if (allowedOrigins.length === 0) return
  const allowed = new Set(allowedOrigins)
  await fastify.register(fastifyCors, {
    // A function, not the list itself: with a list, @fastify/cors still sends an unlisted origin
    // Access-Control-Allow-Credentials and the preflight headers. false turns CORS off for the request.
    origin: (origin, callback) => { callback(null, origin !== undefined && allowed.has(origin)) },
    credentials: true,
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE_SECONDS,
    // Strict mode answers an OPTIONS without Access-Control-Request-Method with a text/plain 400, outside our error shape.
    strictPreflight: false
  })
}, { name: 'cors' })

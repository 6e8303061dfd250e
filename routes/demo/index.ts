import { readFileSync } from 'node:fs'
import type { FastifyPluginAsync } from 'fastify'
import { PAGE_CSP_DIRECTIVES } from '../../plugins/external/helmet.js'

// The page and its script and style, read once; served from our own origin so a strict CSP allows them.
const PUBLIC = new URL('./public/', import.meta.url)
const FILES = {
  'index.html': 'text/html; charset=utf-8',
  'demo.js': 'text/javascript; charset=utf-8',
  'demo.css': 'text/css; charset=utf-8'
} as const

/**
 * A browser demo of the cookie variant at <prefix>/demo/ (DEMO=true; on by
 * default in development). The page calls the API by relative URLs, so it
 * works under any mount prefix, and never sees a token: they stay in
 * HttpOnly cookies.
 */
const demoRoutes: FastifyPluginAsync = async (fastify) => {
  const files = Object.entries(FILES).map(([name, type]) => ({ name, type, body: readFileSync(new URL(name, PUBLIC)) }))
  // Relative URLs in the page resolve against /demo/, so /demo sends the browser there.
  fastify.get('', { schema: { hide: true } }, async (request, reply) => reply.redirect(`${request.url.split('?')[0]}/`))
  for (const { name, type, body } of files) {
    const url = name === 'index.html' ? '/' : `/${name}`
    fastify.get(url, { schema: { hide: true }, prefixTrailingSlash: 'slash', helmet: { contentSecurityPolicy: { useDefaults: false, directives: PAGE_CSP_DIRECTIVES } } }, async (_request, reply) => {
      reply.type(type).header('cache-control', 'no-cache')
      return body
    })
  }
}

export default demoRoutes

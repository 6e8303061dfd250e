import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import type { Variant } from '../../core/config.js'
import { PAGE_CSP_DIRECTIVES, pageCsp } from '../../plugins/external/helmet.js'
import { withSignInForms } from './sign-in-forms.js'

export interface PagesOptions {
  /** The mounted variants and their prefixes, as src/app.ts mounts them. */
  mounts: ReadonlyArray<{ variant: Variant, prefix: string }>
  /** Where the API reference is served (DOCS), linked at the foot of the console; undefined when it is not. */
  docsUrl?: string
}

// Every file is read once at start and served from our own origin, so the strict page CSP allows it
// (the single executable writes this folder out from its assets, see scripts/build-sea.mjs).
const PUBLIC = new URL('./public/', import.meta.url)
const TYPES = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' } as const

/** Where the pages are and which API they call, given the mounted variants. */
export function pageLayout (mounts: PagesOptions['mounts']): { apiPrefix: string, consolePrefix?: string } {
  const cookie = mounts.find(mount => mount.variant === 'cookie')
  // The mail links point at the root; the token they carry is good in either variant, so the pages call the
  // cookie variant where it is mounted (its cookies let a signed-in visitor ask for a new verification link).
  return { apiPrefix: (cookie ?? mounts[0])?.prefix ?? '', consolePrefix: cookie?.prefix }
}

/**
 * qrcode-generator's browser module (ES module, default export `qrcode`), served as /assets/qrcode.js: the
 * console draws the TOTP QR code itself, no outside service sees the secret. Found through the package's
 * main file (its exports name no subpath); the single executable embeds the package (scripts/build-sea.mjs).
 */
function qrcodeModule (): Buffer {
  return readFileSync(new URL('qrcode.mjs', pathToFileURL(createRequire(import.meta.url).resolve('qrcode-generator'))))
}

function read (name: string): Buffer {
  return readFileSync(new URL(name, PUBLIC))
}

/** A page with the API prefix and the console's address written in (data attributes the page script reads). */
function page (name: string, values: Record<'API' | 'CONSOLE' | 'VARIANT', string>, docsUrl?: string): string {
  const docsLink = docsUrl === undefined ? '' : `<footer class="docs"><a href="${docsUrl}">API reference</a></footer>`
  return read(name).toString('utf8')
    .replace(/%(API|CONSOLE|VARIANT)%/g, (_match, key: 'API' | 'CONSOLE' | 'VARIANT') => values[key])
    .replace('<!--DOCS-->', docsLink)
}

/**
 * The pages people reach from a mail or a browser (PAGES=true, the default):
 * /reset-password, /verify-email and /invitations at the root, where the mailed links point
 * (both variants), and the account console at <cookie prefix>/account (the
 * cookie variant only: its tokens stay in HttpOnly cookies, so page script never
 * holds one). /demo, the console's predecessor, leads there.
 * Page script reads the mailed token from the fragment and POSTs it: a GET of a
 * link changes nothing, so a mail scanner that fetches it verifies or spends nothing.
 * Script sends every form; the forms still say method="post", so that a page whose
 * script failed never puts a typed password into a URL.
 */
const pagesRoutes: FastifyPluginAsync<PagesOptions> = async (fastify, { mounts, docsUrl }) => {
  const csp = pageCsp(PAGE_CSP_DIRECTIVES)
  const { apiPrefix, consolePrefix } = pageLayout(mounts)
  const consoleUrl = consolePrefix === undefined ? '' : `${consolePrefix}/account`
  const values = { API: `${apiPrefix}/`, CONSOLE: consoleUrl, VARIANT: mounts.find(mount => mount.prefix === apiPrefix)?.variant ?? 'cookie' }
  const serve = (url: string, body: string) => {
    fastify.get(url, { schema: { hide: true }, onRequest: csp }, async (_request, reply) => {
      reply.type(TYPES.html).header('cache-control', 'no-cache')
      return body
    })
  }

  serve('/reset-password', page('reset-password.html', values))
  serve('/verify-email', page('verify-email.html', values))
  // The invitation mail's link (organisations): it names the organisation, signs in or up, and accepts.
  serve('/invitations', page('invitations.html', values))
  // The admin console, in either variant: it calls the admin API at /admin/* (routes/admin/).
  serve('/admin', page('admin.html', values))
  // The scripts and the style sheet, behind one route (the HTML files are served only as the pages).
  const assets = new Map(readdirSync(PUBLIC).filter(name => /\.(js|css)$/.test(name))
    .map(name => [name, { type: TYPES[name.endsWith('.css') ? 'css' : 'js'], body: read(name) }]))
  assets.set('qrcode.js', { type: TYPES.js, body: qrcodeModule() })
  const params = Type.Object({ file: Type.String({ minLength: 1, maxLength: 64 }) })
  fastify.get<{ Params: { file: string } }>('/assets/:file', { schema: { hide: true, params }, onRequest: csp }, async (request, reply) => {
    const asset = assets.get(request.params.file)
    if (asset === undefined) return reply.callNotFound()
    reply.type(asset.type).header('cache-control', 'no-cache')
    return asset.body
  })
  if (consolePrefix === undefined) return
  serve(consoleUrl, withSignInForms(page('account.html', values, docsUrl), { title: 'Sign in', hidden: false, mailedLink: true }))
  for (const demo of [`${consolePrefix}/demo`, `${consolePrefix}/demo/`]) {
    fastify.get(demo, { schema: { hide: true } }, async (_request, reply) => reply.redirect(consoleUrl))
  }
}

export default pagesRoutes

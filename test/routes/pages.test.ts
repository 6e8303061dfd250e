import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { loadConfig } from '../../core/config.js'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'

const PAGES = ['/reset-password', '/verify-email', '/invitations', '/account']
const ASSETS = readdirSync(new URL('../../routes/pages/public/', import.meta.url)).filter(name => /\.(js|css)$/.test(name))

/** The CSP directives of an answer, by name. */
function cspOf (header: unknown): Map<string, string> {
  return new Map(String(header).split(';').map(part => part.trim().split(/\s+/)).map(([name, ...values]) => [name, values.join(' ')]))
}

/** The api and console addresses a page was given (its body's data attributes). */
function layoutOf (html: string): { api?: string, console?: string } {
  return { api: /data-api="([^"]*)"/.exec(html)?.[1], console: /data-console="([^"]*)"/.exec(html)?.[1] }
}

async function get (server: FastifyInstance, url: string) {
  return await server.inject({ method: 'GET', url })
}

t.test('PAGES is on by default, in production too, and PAGES=false turns it off', async (t) => {
  t.equal(loadConfig({}).pages, true)
  t.equal(loadConfig({ NODE_ENV: 'production', PUBLIC_URL: 'https://accounts.example.com' }).pages, true)
  t.equal(loadConfig({ PAGES: 'false' }).pages, false)
  t.throws(() => loadConfig({ PAGES: 'maybe' }), /PAGES/)
})

t.test('the cookie variant serves the reset, verification, invitation and account pages under a strict CSP', async (t) => {
  const server = await build(t)
  for (const url of PAGES) {
    const page = await get(server, url)
    t.equal(page.statusCode, 200, url)
    t.match(page.headers['content-type'], /^text\/html; charset=utf-8/)
    const csp = cspOf(page.headers['content-security-policy'])
    t.equal(csp.get('default-src'), "'none'", `${url}: nothing loads unless allowed`)
    t.equal(csp.get('script-src'), "'self'", `${url}: scripts from our origin only`)
    t.equal(csp.get('style-src'), "'self'", `${url}: styles from our origin only`)
    t.equal(csp.get('connect-src'), "'self'", `${url}: API calls to our origin only`)
    t.equal(csp.get('frame-ancestors'), "'none'", `${url}: never in a frame`)
    t.notMatch(page.headers['content-security-policy'], /unsafe-inline|unsafe-eval/)
    t.equal(page.headers['x-frame-options'], 'DENY')
    t.equal(page.headers['referrer-policy'], 'no-referrer')
    t.notMatch(page.body, /<script>|<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i, `${url}: no inline script, style or handler`)
    t.notMatch(page.body, /(src|href)="(https?:)?\/\//, `${url}: no asset from another origin`)
    t.match(page.body, /<html lang="en">/)
    t.same(layoutOf(page.body), { api: '/', console: '/account' }, `${url}: calls the API at the root`)
  }
  for (const name of ASSETS) {
    const asset = await get(server, `/assets/${name}`)
    t.equal(asset.statusCode, 200, name)
    t.match(asset.headers['content-type'], name.endsWith('.css') ? /^text\/css/ : /^text\/javascript/)
    t.equal(asset.headers['x-content-type-options'], 'nosniff')
  }
  for (const script of ['account.js', 'invitations.js']) {
    t.notMatch((await get(server, `/assets/${script}`)).body, /localStorage|sessionStorage|document\.cookie/, `${script} keeps nothing in web storage or script-readable cookies`)
  }
  assertError(t, await get(server, '/assets/account.html'), 404, 'NOT_FOUND')
})

t.test('the console\'s QR code drawer is qrcode-generator\'s browser module, served from our origin', async (t) => {
  const server = await build(t)
  const asset = await get(server, '/assets/qrcode.js')
  t.equal(asset.statusCode, 200)
  t.match(asset.headers['content-type'], /^text\/javascript/)
  t.equal(asset.headers['x-content-type-options'], 'nosniff')
  const packaged = readFileSync(new URL('qrcode.mjs', pathToFileURL(createRequire(import.meta.url).resolve('qrcode-generator'))), 'utf8')
  t.equal(asset.body, packaged, 'the package\'s own file, as installed')
  t.match(asset.body, /export default qrcode/, 'an ES module the console imports')
  // Every module a page script imports is served (a missing one would stop the console's script).
  for (const name of ASSETS.filter(name => name.endsWith('.js'))) {
    const source = readFileSync(new URL(`../../routes/pages/public/${name}`, import.meta.url), 'utf8')
    for (const [, imported] of source.matchAll(/from '\.\/([\w-]+\.js)'/g)) {
      t.equal((await get(server, `/assets/${imported}`)).statusCode, 200, `${name} imports ${imported}`)
    }
  }
})

t.test('every label of the pages names an input of the page', async (t) => {
  const server = await build(t)
  for (const url of PAGES) {
    const html = (await get(server, url)).body
    const ids = new Set([...html.matchAll(/<input[^>]*\sid="([^"]+)"/g)].map(match => match[1]))
    const inputs = [...html.matchAll(/<input\b/g)].length
    const labelled = [...html.matchAll(/<label for="([^"]+)"/g)].map(match => match[1])
    const wrapping = [...html.matchAll(/<label class="check"><input/g)].length
    t.ok(labelled.every(id => ids.has(id)), `${url}: each label points at an input`)
    t.equal(labelled.length + wrapping, inputs, `${url}: each input has a label`)
  }
})

t.test('the console has a hidden "Sign in with another account" section and a "Linked sign-in providers" list', async (t) => {
  const server = await build(t)
  const html = (await get(server, '/account')).body
  t.match(html, /<section id="oidc-login" class="card" aria-labelledby="oidc-login-title" hidden>/, 'hidden until the providers are known')
  t.match(html, /<ul id="oidc-providers"/)
  t.match(html, /<h2 id="identities-title" tabindex="-1">Linked sign-in providers<\/h2>/, 'a heading the focus can move to')
  t.match(html, /<ul id="identities" class="items"><\/ul>/)
  t.match(html, /<p id="identities-message" class="message" aria-live="polite"><\/p>/, 'a live region for the unlink answers')
  t.match(html, /<p id="status" class="message" aria-live="polite" tabindex="-1">/, 'the status can take the focus (a provider\'s #error= landing)')
  const script = (await get(server, '/assets/account-providers.js')).body
  for (const code of ['access_denied', 'invalid_response', 'account_exists', 'identity_conflict', 'email_required', 'email_not_verified', 'invalid_email']) {
    t.match(script, new RegExp(`\\b${code}:`), `a message for #error=${code}`)
  }
  t.match(script, /history\.replaceState/, 'the fragment leaves the address bar')
})

t.test('both sign-in pages offer passkey autofill on the email input and "Email me a code" with a one-time-code field', async (t) => {
  const server = await build(t)
  for (const url of ['/account', '/oauth/interaction/some-uid']) {
    const page = await get(server, url)
    t.equal(page.statusCode, 200, url)
    t.match(page.body, /<input id="login-email" name="email" type="email" autocomplete="username webauthn" required>/, `${url}: the browser's autofill may offer passkeys there`)
    t.match(page.body, /<button id="email-code-start" type="button" class="secondary">Email me a code<\/button>/, url)
    t.match(page.body, /<input id="mailed-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code"/, `${url}: a numeric keypad, the code offered from the mail`)
    t.notMatch(/<form id="mailed-code-form"[\s\S]*?<\/form>/.exec(page.body)?.[0] ?? '', /type="password"/, `${url}: the code step (a sign-up too) has no password field`)
    for (const field of ['first_name', 'last_name', 'username']) t.match(page.body, new RegExp(`<div data-signup="${field}" hidden>`), `${url}: ${field}, shown when the verify asks for it`)
  }
})

t.test('/demo, the old demo page, leads to the account console', async (t) => {
  const server = await build(t)
  for (const url of ['/demo', '/demo/']) {
    const response = await get(server, url)
    t.equal(response.statusCode, 302, url)
    t.equal(response.headers.location, '/account')
  }
})

t.test('the header variant serves the reset, verification and invitation pages but no console', async (t) => {
  const server = await build(t, { variant: 'header' })
  for (const url of ['/reset-password', '/verify-email', '/invitations']) {
    const page = await get(server, url)
    t.equal(page.statusCode, 200, url)
    t.same(layoutOf(page.body), { api: '/', console: '' }, `${url}: no console to sign in with`)
  }
  assertError(t, await get(server, '/account'), 404, 'NOT_FOUND')
  assertError(t, await get(server, '/demo'), 404, 'NOT_FOUND')
})

t.test('with both variants mounted, the mail pages stay at the root and call the cookie variant; the console follows its prefix', async (t) => {
  const server = await build(t, { mounts: [{ variant: 'header', prefix: '/v1' }, { variant: 'cookie', prefix: '/v2' }] })
  for (const url of ['/reset-password', '/verify-email', '/invitations', '/v2/account']) {
    const page = await get(server, url)
    t.equal(page.statusCode, 200, url)
    t.same(layoutOf(page.body), { api: '/v2/', console: '/v2/account' }, url)
  }
  t.match((await get(server, '/invitations')).body, /data-variant="cookie"/, 'the invitation page rides on the cookie variant\'s session')
  t.equal((await get(server, '/v2/demo')).headers.location, '/v2/account')
  for (const url of ['/account', '/v1/account', '/v1/reset-password']) assertError(t, await get(server, url), 404, 'NOT_FOUND')

  const headerOnly = await build(t, { mounts: [{ variant: 'header', prefix: '/v1' }] })
  t.same(layoutOf((await get(headerOnly, '/reset-password')).body), { api: '/v1/', console: '' }, 'the header variant\'s API when it is the only one')
  t.match((await get(headerOnly, '/invitations')).body, /data-variant="header"/, 'the invitation page keeps the header variant\'s tokens itself')
})

t.test('PAGES=false: no page, no asset, no /demo', async (t) => {
  const server = await build(t, { env: { PAGES: 'false' } })
  for (const url of [...PAGES, '/demo', '/assets/account.js', '/assets/pages.css']) assertError(t, await get(server, url), 404, 'NOT_FOUND')
})

t.test('opening the verification link (a GET, as a mail scanner does) verifies nothing; the page\'s POST does', async (t) => {
  const mailbox = await startMailbox(t)
  const publicUrl = 'http://localhost:3000'
  const server = await build(t, { env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL: publicUrl } })
  const session = await loggedInUser(server, 'cookie')
  const token = tokenFromLink(await mailbox.next(session.user.email, 'Verify your email address'), publicUrl, '/verify-email')
  const verified = async () => (await server.inject({ method: 'GET', url: '/auth/account', ...credentials('cookie', session) })).json().email_verified

  // A scanner may send the fragment as a query string too; neither form verifies.
  t.equal((await get(server, '/verify-email')).statusCode, 200)
  t.equal((await get(server, `/verify-email?token=${token}`)).statusCode, 200)
  t.equal(await verified(), false, 'still unverified after the GETs')
  t.equal((await server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token } })).statusCode, 204)
  t.equal(await verified(), true)
})

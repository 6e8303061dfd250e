import { createHash } from 'node:crypto'
import t, { type Test } from 'tap'
import type { Variant } from '../../core/config.js'
import { launchChromium, skipWithoutChromium } from '../fixtures/browser.js'
import { build } from '../fixtures/build.js'
import { CookieJar, freePort, providerSettings, startOpenIdProvider, throughProvider } from '../fixtures/openid-provider.js'

// Issue 21, finding 12: the provider sign-in's state cookie had no __Host- prefix, so a sibling subdomain
// (or a plain-HTTP page of the same host) could plant its own pending sign-in in the browser (login CSRF).
// The session cookies keep the names the contract fixes (accessToken, refreshToken): only the state cookie moves.

/** The service listening (the provider sends the browser back to it), with one provider named "test". */
async function serviceWithProvider (t: Test, variant: Variant, env: Record<string, string> = {}) {
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const provider = await startOpenIdProvider(t, [`${baseUrl}/auth/oidc/test/callback`])
  const server = await build(t, { variant, env: { PUBLIC_URL: baseUrl, OIDC_PROVIDERS: 'test', ...providerSettings('test', provider), ...env } })
  await server.listen({ port, host: 'localhost' })
  provider.accounts.set('grace', { email: 'grace@example.test', email_verified: true, given_name: 'Grace', family_name: 'Hopper' })
  return { server, baseUrl }
}

/** The start's query: the header variant's app sends its PKCE code_challenge (S256) along (the cookie variant needs none). */
const CHALLENGE = createHash('sha256').update('the app\'s code verifier, 43 characters or more').digest('base64url')
const startQuery = (variant: Variant) => variant === 'header' ? `?code_challenge=${CHALLENGE}` : ''

/** A Set-Cookie line as a browser reads it: the name, the value, and its attributes by lower-cased name. */
function parseSetCookie (line: string) {
  const [pair, ...rest] = line.split(';')
  const separator = pair.indexOf('=')
  const attributes = new Map(rest.map(part => {
    const [key, ...value] = part.trim().split('=')
    return [key.toLowerCase(), value.join('=')] as const
  }))
  return { name: pair.slice(0, separator).trim(), value: pair.slice(separator + 1).trim(), attributes }
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: the sign-in state cookie is a __Host- cookie (Secure, Path=/, no Domain), and the sign-in completes with it`, async (t) => {
    const service = await serviceWithProvider(t, variant)
    const start = await fetch(`${service.baseUrl}/auth/oidc/test${startQuery(variant)}`, { redirect: 'manual' })
    t.equal(start.status, 302)
    const [line] = start.headers.getSetCookie()
    const cookie = parseSetCookie(line)
    t.match(cookie.name, /^__Host-oidc_state/, 'the __Host- prefix: only this host, over HTTPS, may set it')
    t.ok(cookie.attributes.has('secure'), 'Secure')
    t.equal(cookie.attributes.get('path'), '/', 'Path=/ (the prefix requires it)')
    t.notOk(cookie.attributes.has('domain'), 'no Domain')
    t.ok(cookie.attributes.has('httponly'), 'HttpOnly')
    t.equal(cookie.attributes.get('samesite'), 'Lax')

    const jar = new CookieJar()
    const { callbackUrl } = await throughProvider(`${service.baseUrl}/auth/oidc/test${startQuery(variant)}`, jar, { login: 'grace' })
    t.ok(callbackUrl, 'back from the provider')
    t.ok([...jar.cookies.keys()].some(name => name === cookie.name), 'the browser holds it under that name')
    const callback = await fetch(callbackUrl ?? '', { redirect: 'manual', headers: { cookie: jar.header() } })
    t.equal(callback.status, variant === 'header' ? 303 : 200, 'the callback finds the pending sign-in in it')
    if (variant === 'header') t.match(callback.headers.get('location'), /#code=/)
    const cleared = callback.headers.getSetCookie().map(parseSetCookie).find(candidate => candidate.name === cookie.name)
    t.equal(cleared?.value, '', 'spent at the callback')
    t.ok(cleared?.attributes.has('secure') && cleared.attributes.get('path') === '/', 'cleared with Secure and Path=/, as a browser requires for a __Host- cookie')
    if (variant === 'cookie') {
      const names = callback.headers.getSetCookie().map(line => parseSetCookie(line).name)
      t.ok(names.includes('accessToken') && names.includes('refreshToken'), 'the session cookies keep the names the contract fixes')
    }
  })
}

t.test('with COOKIE_SECURE=false the prefix cannot apply (a browser refuses a __Host- cookie without Secure): a plain name', async (t) => {
  const service = await serviceWithProvider(t, 'cookie', { COOKIE_SECURE: 'false' })
  const start = await fetch(`${service.baseUrl}/auth/oidc/test`, { redirect: 'manual' })
  const cookie = parseSetCookie(start.headers.getSetCookie()[0])
  t.match(cookie.name, /^oidc_state/)
  t.notOk(cookie.attributes.has('secure'))
  const jar = new CookieJar()
  const { callbackUrl } = await throughProvider(`${service.baseUrl}/auth/oidc/test`, jar, { login: 'grace' })
  const callback = await fetch(callbackUrl ?? '', { redirect: 'manual', headers: { cookie: jar.header() } })
  t.equal(callback.status, 200, 'the sign-in completes')
})

t.test('in Chromium (Secure on; http://localhost is a secure context to it), the __Host- state cookie is kept, carries the sign-in, and is spent', { skip: skipWithoutChromium }, async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const browser = await launchChromium(t)
  const context = await browser.newContext()
  t.teardown(() => context.close())
  const page = await context.newPage()
  await page.goto(`${service.baseUrl}/auth/oidc/test?redirect_to=/auth/identities`)
  const pending = (await context.cookies(service.baseUrl)).find(cookie => cookie.name.startsWith('__Host-oidc_state'))
  t.match(pending, { path: '/', secure: true, httpOnly: true, sameSite: 'Lax', domain: 'localhost' }, 'the browser took the __Host- cookie, host-only')
  await page.fill('input[name=login]', 'grace')
  await page.fill('input[name=password]', 'any password')
  await Promise.all([page.waitForURL(`${service.baseUrl}/auth/identities`), page.click('button[type=submit]')])
  t.match(JSON.parse(await page.locator('body').innerText()), { identities: [{ provider: 'test' }] }, 'arrived signed in: the callback read the state cookie')
  // Every cookie of the context, whatever its path (the refresh cookie's is narrow).
  const names = (await context.cookies()).map(cookie => cookie.name)
  t.notOk(names.some(name => name.includes('oidc_state')), 'the state cookie is spent: gone from the browser')
  t.ok(names.includes('accessToken') && names.includes('refreshToken'), 'the session cookies, by the contract\'s names')
})

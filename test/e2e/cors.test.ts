import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { build } from '../fixtures/build.js'
import { registerUser } from '../fixtures/factories.js'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** A web app's origin: an empty page on a port of its own, whose script (page.evaluate) calls the service. */
async function appOrigin (t: Test): Promise<string> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end('<!doctype html><title>a browser app</title>')
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/**
 * The app's script, as the page runs it: log in, read the user, refresh; each step's outcome, or how
 * its fetch failed. Plain JavaScript in a string: the test's TypeScript is compiled with helpers
 * that do not exist in the page.
 */
const APP_SCRIPT = `async ({ api, email, password }) => {
  async function step (url, init) {
    try {
      const response = await fetch(url, init)
      const text = await response.text()
      return { ok: true, status: response.status, body: text === '' ? undefined : JSON.parse(text), requestId: response.headers.get('x-request-id') }
    } catch (error) {
      return { ok: false, error: String(error) }
    }
  }
  const login = await step(api + '/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })
  if (!login.ok) return { login }
  const bearer = 'Bearer ' + login.body.accessToken
  const read = await step(api + '/users/' + login.body.user.id, { headers: { authorization: bearer } })
  const refresh = await step(api + '/auth/refresh-token', { method: 'POST', headers: { authorization: bearer, 'x-refresh-token': 'Bearer ' + login.body.refreshToken } })
  return { login, read, refresh }
}`

interface Outcome { ok: boolean, status?: number, body?: any, requestId?: string | null, error?: string }

t.test('Chromium: an app on a listed origin logs in, reads the user and refreshes with variant A; an unlisted one is blocked', {
  skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM}: install Debian's chromium (apt-get install chromium) to run the browser test`
}, async (t) => {
  const listed = await appOrigin(t)
  const unlisted = await appOrigin(t)
  const server = await build(t, { variant: 'header', env: { ALLOWED_ORIGINS: listed } })
  await server.listen({ host: '127.0.0.1', port: 0 })
  const api = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}`
  const user = await registerUser(server, 'header')

  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
  t.teardown(() => browser.close())

  /** Runs the app's script in a page of `origin`. */
  async function runApp (origin: string) {
    const page = await browser.newPage()
    const console: string[] = []
    page.on('console', message => console.push(message.text()))
    await page.goto(origin)
    const outcomes = await page.evaluate(`(${APP_SCRIPT})(${JSON.stringify({ api, email: user.email, password: user.password })})`)
    await page.close()
    return { outcomes: outcomes as Record<string, Outcome>, console }
  }

  const allowed = await runApp(listed)
  t.match(allowed.outcomes.login, { ok: true, status: 200, body: { user: { id: user.id } } }, 'login from the listed origin')
  t.ok(allowed.outcomes.login.requestId, 'X-Request-Id is exposed to the app')
  t.match(allowed.outcomes.read, { ok: true, status: 200, body: { id: user.id, email: user.email } }, 'the user read with the bearer token (a preflighted request)')
  t.match(allowed.outcomes.refresh, { ok: true, status: 200, body: { accessToken: String } }, 'refresh with both token headers')
  t.same(allowed.console.filter(line => /CORS/.test(line)), [], 'no CORS complaint in the console')

  const blocked = await runApp(unlisted)
  t.match(blocked.outcomes, { login: { ok: false, error: /TypeError: Failed to fetch/ } }, 'the unlisted origin\'s login never reaches its script')
  t.notOk('read' in blocked.outcomes)
  t.ok(blocked.console.some(line => /blocked by CORS policy/.test(line)), `the browser says why: ${blocked.console.join(' | ')}`)
})

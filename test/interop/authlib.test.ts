import { spawn, spawnSync } from 'node:child_process'
import { createInterface } from 'node:readline'
import t from 'tap'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizeInBrowser, browse, CookieJar, providerService, REDIRECT_URI } from '../fixtures/oauth.js'

// Python's Authlib (Debian's python3-authlib) as the app, with its defaults: test/interop/authlib-client.py.
// Debian's Python runs it, where Debian's package puts the library; where it is missing the test installs it
// with apt (as .ci/run does), or skips, saying so, where there is no apt.

const PYTHON = '/usr/bin/python3'
const SCRIPT = new URL('./authlib-client.py', import.meta.url).pathname
const POST_LOGOUT = 'http://127.0.0.1:4999/bye'

function authlibAvailable (): boolean {
  return spawnSync(PYTHON, ['-c', 'import authlib, requests'], { stdio: 'ignore' }).status === 0
}

function installAuthlib (): string | undefined {
  if (authlibAvailable()) return undefined
  if (spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status !== 0) return 'no apt-get here to install python3-authlib'
  const installed = spawnSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-authlib python3-requests'], { stdio: 'ignore', timeout: 100_000 })
  return installed.status === 0 && authlibAvailable() ? undefined : 'python3-authlib could not be installed with apt-get'
}

const missing = installAuthlib()

t.test('Authlib: code flow with PKCE, the ID token verified, userinfo, refresh, revocation, logout', { skip: missing }, async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Guido', last_name: 'Rossum' })
  const app = await addClient(server, { postLogoutRedirectUris: [POST_LOGOUT] })
  const child = spawn(PYTHON, [SCRIPT, baseUrl, app.clientId, app.clientSecret as string, REDIRECT_URI, POST_LOGOUT], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => { child.kill() })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const next = async (): Promise<Record<string, any>> => {
    const line = await lines.next()
    if (line.done === true) throw new Error('the Authlib app ended early')
    const message = JSON.parse(line.value as string)
    if (message.error !== undefined) throw new Error(`the Authlib app failed: ${message.error as string}`)
    return message
  }

  const { authorize } = await next()
  const jar = new CookieJar()
  const callback = await authorizeInBrowser(baseUrl, jar, authorize, { person: user })
  child.stdin.write(`${callback.href}\n`)
  const result = await next()
  t.equal(result.id_token.sub, String(user.id), 'the ID token verified by Authlib names the user')
  t.equal(result.id_token.iss, baseUrl)
  t.match(result.userinfo, { sub: String(user.id), email: user.email, given_name: 'Guido', family_name: 'Rossum' })
  t.equal(result.refreshed, true, 'the refresh token grant')
  t.equal(result.userinfo_after_refresh.sub, String(user.id), 'userinfo with the refreshed token')
  t.equal(result.revocation_status, 200, 'revocation')

  const html = await (await browse(jar, result.logout)).text()
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1]
  if (action === undefined || xsrf === undefined) throw new Error(`no logout form: ${html.slice(0, 300)}`)
  const back = await browse(jar, new URL(action, baseUrl).href, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ xsrf, logout: 'yes' }) })
  t.equal(back.headers.get('location'), `${POST_LOGOUT}?state=authlib`, 'RP-initiated logout with Authlib\'s ID token as the hint')
})

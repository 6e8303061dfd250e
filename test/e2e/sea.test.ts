import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { once } from 'node:events'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import packageJson from '../../package.json' with { type: 'json' }

// `npm run test:sea` builds the executable (about 15 s and 110 MB) and runs this; plain `npm test` skips it.
const EXECUTABLE = fileURLToPath(new URL('../../build/account-service', import.meta.url))

t.test('the single executable serves a register, a login and a refresh from an empty folder, without Node or node_modules', {
  skip: process.env.SEA_TEST === '1' ? false : 'the single executable is tested by `npm run test:sea` (SEA_TEST=1)'
}, async (t) => {
  t.ok(existsSync(EXECUTABLE), 'build/account-service exists (npm run build:sea)')
  const folder = mkdtempSync(join(tmpdir(), 'account-sea-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  const scratch = join(folder, 'tmp')
  mkdirSync(scratch)
  copyFileSync(EXECUTABLE, join(folder, 'account-service'))

  // No PATH (so no node), no node_modules: only the file, in a folder of its own. DOCS=true
  // because production hides /docs by default, and the test checks the bundled docs assets.
  const child = spawn('./account-service', [], { cwd: folder, env: { PORT: '0', NODE_ENV: 'production', DOCS: 'true', TMPDIR: scratch }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => { output += chunk })
  child.stderr.on('data', (chunk) => { output += chunk })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let baseUrl: string | undefined
  for (const deadline = Date.now() + 20_000; baseUrl === undefined && Date.now() < deadline && child.exitCode === null;) {
    baseUrl = /"msg":"Server listening at (http:\/\/[^"]+)"/.exec(output)?.[1]
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  if (baseUrl === undefined) throw new Error(`the executable did not start:\n${output}`)
  t.equal(readdirSync(scratch).length, 1, 'its assets are written to one temporary folder')

  const post = (path: string, body: unknown) => fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const registered = await post('/auth/register', { first_name: 'Ada', last_name: 'Lovelace', username: 'ada', email: 'ada@example.com', password: 'analytical engine' })
  t.equal(registered.status, 201)
  const login = await post('/auth/login', { email: 'ada@example.com', password: 'analytical engine' })
  t.equal(login.status, 200)
  t.equal((await login.json()).user.email, 'ada@example.com')
  const refreshToken = (response: Response) => /^refreshToken=([^;]+)/.exec(response.headers.getSetCookie().find(cookie => cookie.startsWith('refreshToken=')) ?? '')?.[1]
  const refreshed = await fetch(`${baseUrl}/auth/refresh-token`, { method: 'POST', headers: { cookie: `refreshToken=${refreshToken(login)}` } })
  t.equal(refreshed.status, 200, 'the refresh token is taken')
  t.ok(refreshToken(refreshed), 'and rotated')
  t.equal((await fetch(`${baseUrl}/ready`)).status, 200, 'migrations applied')
  t.equal((await fetch(`${baseUrl}/docs/static/swagger-ui.css`)).status, 200, 'the docs UI files are there')
  const resetPage = await fetch(`${baseUrl}/reset-password`)
  t.equal(resetPage.status, 200, 'the pages are served (PAGES is on by default)')
  t.match(await resetPage.text(), /<script type="module" src="\/assets\/reset-password\.js"><\/script>/)
  t.equal((await fetch(`${baseUrl}/assets/account.js`)).status, 200, 'and their scripts, embedded')
  const qrcode = await fetch(`${baseUrl}/assets/qrcode.js`)
  t.equal(qrcode.status, 200, 'the console\'s QR code drawer too (from node_modules, embedded)')
  t.match(await qrcode.text(), /export default qrcode/)
  t.ok(existsSync(join(folder, 'data', 'accounts.db')), 'the default store is created beside it')
  t.notMatch(output, /Warning/, 'no warning at start')

  child.kill('SIGTERM')
  const [code] = await once(child, 'exit')
  t.equal(code, 0)
  t.same(readdirSync(scratch), [], 'the temporary assets are removed at exit')

  const admin = spawnSync('./account-service', ['users', 'show', 'ada@example.com', '--json'], { cwd: folder, env: { TMPDIR: scratch }, encoding: 'utf8', timeout: 20_000 })
  t.equal(admin.status, 0, admin.stderr)
  t.equal(JSON.parse(admin.stdout).username, 'ada', 'with arguments it is the admin CLI')
  t.same(readdirSync(scratch), [])

  // It embeds the pinned Node 24 LTS (scripts/node-runtime.mjs), whatever Node built it.
  const version = spawnSync('./account-service', ['--version'], { cwd: folder, env: { TMPDIR: scratch }, encoding: 'utf8', timeout: 20_000 })
  t.equal(version.status, 0, version.stderr)
  t.match(version.stdout, new RegExp(`^account-service ${packageJson.version.replaceAll('.', '\\.')} \\(Node v24\\.\\d+\\.\\d+\\)\n$`), 'it runs on Node 24 and says so')
})

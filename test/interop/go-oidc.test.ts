import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { registerUser } from '../fixtures/factories.js'
import { addClient, providerService, REDIRECT_URI } from '../fixtures/oauth.js'
import { debianPackages, logOutInBrowser, signInWithExternalApp, succeeds } from '../fixtures/relying-parties.js'

// Go's go-oidc with golang.org/x/oauth2 (Debian's golang-github-coreos-go-oidc-dev, go-oidc 2.1) as the
// app, with their defaults: test/interop/go-oidc/main.go, built in GOPATH mode against Debian's sources.
// go-oidc verifies ID tokens signed with RS256 only unless told otherwise. Where the package is missing the
// test installs it with apt (as .ci/run does), or skips, saying so, where there is no apt.

const GOPATH_DEBIAN = '/usr/share/gocode'
const SOURCE = new URL('./go-oidc/main.go', import.meta.url).pathname
const POST_LOGOUT = 'http://127.0.0.1:4999/bye'

const missing = debianPackages(['golang-github-coreos-go-oidc-dev'],
  () => succeeds('go', ['version']) && existsSync(join(GOPATH_DEBIAN, 'src/github.com/coreos/go-oidc')))

t.test('go-oidc: code flow with PKCE, the ID token verified, userinfo, refresh, logout', { skip: missing }, async (t) => {
  const folder = mkdtempSync(join(tmpdir(), 'go-oidc-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  const binary = join(folder, 'rp')
  const env = { ...process.env, GO111MODULE: 'off', GOPATH: `${folder}:${GOPATH_DEBIAN}`, GOFLAGS: '', GOCACHE: join(tmpdir(), 'go-oidc-build-cache') }
  const { spawnSync } = await import('node:child_process')
  const build = spawnSync('go', ['build', '-o', binary, SOURCE], { env, encoding: 'utf8', timeout: 110_000 })
  t.equal(build.status, 0, `go build: ${build.stderr}`)

  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Rob', last_name: 'Pike' })
  const app = await addClient(server, { postLogoutRedirectUris: [POST_LOGOUT] })
  const { result, jar } = await signInWithExternalApp(t, baseUrl, user, binary, [baseUrl, app.clientId, app.clientSecret as string, REDIRECT_URI, POST_LOGOUT])
  t.equal(result.id_token.sub, String(user.id), 'the ID token verified by go-oidc names the user')
  t.match(result.userinfo, { sub: String(user.id), email: user.email, given_name: 'Rob', family_name: 'Pike' })
  t.equal(result.refreshed, true, 'the refresh token grant')
  t.equal(result.userinfo_after_refresh.sub, String(user.id), 'userinfo with the refreshed token')

  const back = await logOutInBrowser(baseUrl, jar, result.logout)
  t.equal(back.headers.get('location'), `${POST_LOGOUT}?state=go-oidc`, 'RP-initiated logout with go-oidc\'s ID token as the hint')
})

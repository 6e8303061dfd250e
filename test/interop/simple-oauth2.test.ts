import { createHash, randomBytes } from 'node:crypto'
import { AuthorizationCode, ClientCredentials, type AccessToken, type ModuleOptions } from 'simple-oauth2'
import t from 'tap'
import { addResourceServer } from '../../core/oauth/resource-servers.js'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizeInBrowser, CookieJar, providerService, REDIRECT_URI } from '../fixtures/oauth.js'

// simple-oauth2 5 (hapi's OAuth 2 client) as an app would use it, with its defaults: only `tokenHost` is
// set, and its default paths (/oauth/token, /oauth/authorize, /oauth/revoke) are the provider's. It reads
// every answer strictly as JSON (lib/client/client.js sets @hapi/wreck's `json: 'strict'`, which rejects any
// other content type, an empty 200 of revocation too: wreck lib/index.js, "The content-type is not JSON
// compatible"), so revocation's every success must be typed as JSON (issue 34, item 11).
// Its two ways of client authentication are tried: HTTP Basic (`authorizationMethod: 'header'`, its
// default) and the form (`'body'`). It has no PKCE helper: the verifier and challenge are parameters.

const API = 'https://api.example.com/orders'

/** What simple-oauth2 rejects with on an error answer: a Boom error, the answer's JSON in data.payload. */
interface Refusal { data?: { payload?: { error?: string } } }
const errorOf = async (call: Promise<unknown>) => await call.then(() => 'none', (error: Refusal) => error.data?.payload?.error ?? String(error))

t.test('simple-oauth2 against the provider', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Eran', last_name: 'Hammer' })
  await addResourceServer(server.store, { uri: API, scopes: ['orders:read', 'orders:write'] }, new Date())
  const jar = new CookieJar()

  const settings = (client: { clientId: string, clientSecret?: string }, authorizationMethod: 'header' | 'body'): ModuleOptions => ({
    client: { id: client.clientId, secret: client.clientSecret },
    auth: { tokenHost: baseUrl },
    ...(authorizationMethod === 'header' ? {} : { options: { authorizationMethod } })
  })
  const userinfo = async (token: AccessToken) => await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${token.token.access_token}` } })
  const introspect = async (client: { clientId: string, clientSecret?: string }, token: string) => await (await fetch(`${baseUrl}/oauth/introspect`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret ?? ''}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token })
  })).json() as { active: boolean }

  /** The browser's trip from simple-oauth2's authorizeURL to the code at the app's redirect URI. */
  async function codeFrom (url: string): Promise<string> {
    t.match(url, `${baseUrl}/oauth/authorize?`, 'authorizeURL with the default authorizePath is the provider\'s authorization endpoint')
    const callback = await authorizeInBrowser(baseUrl, jar, url, { person: user })
    const code = callback.searchParams.get('code')
    if (code === null) throw new Error(`no code: ${callback.href}`)
    return code
  }

  for (const method of ['header', 'body'] as const) {
    t.test(`${method}: ClientCredentials.getToken, expired(), revoke('access_token')`, async (t) => {
      const machine = await addClient(server, { grants: ['client_credentials'], redirectUris: [] })
      const client = new ClientCredentials(settings(machine, method))
      const before = Date.now()
      const token = await client.getToken({ scope: 'orders:read', resource: API })
      t.match(token.token, { token_type: 'Bearer', scope: 'orders:read', access_token: String }, 'a token for the API\'s scope')
      const lifetime = Number(token.token.expires_in)
      t.ok(lifetime > 0, 'expires_in')
      t.ok(token.token.expires_at.getTime() >= before + lifetime * 1000, 'expires_at: expires_in from now')
      t.equal(token.expired(), false, 'not expired')
      t.equal(token.expired(lifetime - 60), false, 'nor within a window shorter than its life')
      t.equal(token.expired(lifetime + 1), true, 'expired within a window longer than its life: time to get another')
      t.equal((await introspect(machine, token.token.access_token)).active, true, 'the API would take it')

      await token.revoke('access_token')
      t.pass('revoke(\'access_token\') resolved: the answer parsed as simple-oauth2 reads it')
      t.equal((await introspect(machine, token.token.access_token)).active, false, 'the revoked token is no longer active')
      await token.revoke('access_token')
      t.pass('revoking it again (a token the provider no longer takes) resolves too: the same answer')
    })

    t.test(`${method}: AuthorizationCode with PKCE as parameters, refresh(), revoke('access_token'), revokeAll()`, async (t) => {
      const app = await addClient(server)
      const client = new AuthorizationCode(settings(app, method))
      async function signIn (): Promise<AccessToken> {
        const verifier = randomBytes(32).toString('base64url')
        const code = await codeFrom(client.authorizeURL({
          redirect_uri: REDIRECT_URI,
          scope: ['openid', 'email', 'profile', 'offline_access'],
          state: randomBytes(8).toString('hex'),
          prompt: 'consent',
          code_challenge: createHash('sha256').update(verifier).digest('base64url'),
          code_challenge_method: 'S256'
        }))
        return await client.getToken({ code, redirect_uri: REDIRECT_URI, code_verifier: verifier })
      }

      const token = await signIn()
      t.match(token.token, { token_type: 'Bearer', access_token: String, refresh_token: String, id_token: String }, 'access, refresh and ID tokens')
      t.equal(token.expired(), false)
      t.match(await (await userinfo(token)).json(), { sub: String(user.id), email: user.email, given_name: 'Eran' }, 'userinfo with the access token')

      const refreshed = await token.refresh()
      t.not(refreshed.token.access_token, token.token.access_token, 'refresh(): a new access token')
      t.equal(refreshed.token.refresh_token, token.token.refresh_token, 'a confidential client keeps its refresh token (no rotation)')
      t.equal(refreshed.expired(), false)
      t.equal((await userinfo(refreshed)).status, 200, 'the refreshed token is good at userinfo')

      await refreshed.revoke('access_token')
      t.pass('revoke(\'access_token\') resolved: the answer parsed as simple-oauth2 reads it')
      t.equal((await userinfo(refreshed)).status, 401, 'the revoked access token is refused at userinfo')
      t.equal(await errorOf(refreshed.refresh()), 'invalid_grant', 'revoking the access token ended its grant: the refresh token is refused too')

      const second = await signIn()
      await second.revokeAll()
      t.pass('revokeAll() resolved: both revocations answered as simple-oauth2 reads them')
      t.equal((await userinfo(second)).status, 401, 'its access token is refused')
      t.equal(await errorOf(second.refresh()), 'invalid_grant', 'and its refresh token')
    })

    t.test(`${method}: AuthorizationCode without PKCE for a client added with --pkce optional`, async (t) => {
      const app = await addClient(server, { pkce: 'optional' })
      const client = new AuthorizationCode(settings(app, method))
      const code = await codeFrom(client.authorizeURL({ redirect_uri: REDIRECT_URI, scope: 'openid email', state: 'xyz' }))
      const token = await client.getToken({ code, redirect_uri: REDIRECT_URI })
      t.match(token.token, { token_type: 'Bearer', access_token: String, id_token: String })
      t.match(await (await userinfo(token)).json(), { sub: String(user.id), email: user.email })
      await token.revoke('access_token')
      t.equal((await userinfo(token)).status, 401, 'revoked')
    })
  }

  t.test('an error answer reaches the app as simple-oauth2 reports it: a wrong secret, a wrong code', async (t) => {
    const app = await addClient(server)
    for (const method of ['header', 'body'] as const) {
      const wrongSecret = new ClientCredentials(settings({ clientId: app.clientId, clientSecret: 'not the secret' }, method))
      t.equal(await errorOf(wrongSecret.getToken({})), 'invalid_client', `${method}: a wrong secret`)
      const client = new AuthorizationCode(settings(app, method))
      t.equal(await errorOf(client.getToken({ code: 'not-a-code', redirect_uri: REDIRECT_URI, code_verifier: 'x'.repeat(43) })), 'invalid_grant', `${method}: a wrong code`)
    }
  })
})

import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list'
import { decodeJwt } from 'jose'
import * as client from 'openid-client'
import t from 'tap'
import { runAdmin } from '../../src/admin.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { eventually } from '../fixtures/eventually.js'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, oauthErrorOf, providerService, relyingParty } from '../fixtures/oauth.js'

// Issue 33, finding 11: removing an app (`account-service clients remove`, run beside the service on its
// store) ends its grants as revoking them does: their sessions revoked (the status bit set, every
// instance told through the revocation log), access tokens refused at userinfo, refresh tokens dead.

async function cli (databaseUrl: string, ...args: string[]) {
  const out: string[] = []
  const code = await runAdmin(args, { out: line => { out.push(line) }, err: line => { out.push(line) }, env: { DATABASE_URL: databaseUrl } })
  return { code, out: out.join('\n') }
}

async function statusBit (accessToken: string): Promise<number> {
  const { idx, uri } = (decodeJwt(accessToken).status as { status_list: { idx: number, uri: string } }).status_list
  return getListFromStatusListJWT(await (await fetch(uri, { headers: { accept: 'application/statuslist+jwt' } })).text()).getStatus(idx)
}

t.test('clients remove ends the app\'s grants: userinfo 401, refresh refused, the status bit set', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const { server, baseUrl } = await providerService(t, { env: { DATABASE_URL: databaseUrl } })
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { name: 'Removed App' })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid email offline_access', { prompt: 'consent' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  const userinfo = () => fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  t.equal((await userinfo()).status, 200, 'the app reads userinfo before')
  t.equal(await statusBit(tokens.access_token), 0)

  const removed = await cli(databaseUrl, 'clients', 'remove', app.clientId)
  t.equal(removed.code, 0, removed.out)
  t.ok(await eventually(async () => (await userinfo()).status === 401), 'userinfo refuses the access token')
  t.ok(await eventually(async () => await statusBit(tokens.access_token) === 1), 'the status list marks it revoked')
  // invalid_client once no instance keeps the registration in memory (CLIENT_CACHE_MS), invalid_grant before.
  t.match(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), /^invalid_(client|grant)$/, 'its refresh token is refused')
  const grants = await server.store.listOAuthModels('Grant', new Date(), { accountId: String(user.id) })
  t.same(grants, [], 'its grants are gone')
  const sessions = await server.inject({ method: 'GET', url: '/auth/apps', headers: { authorization: `Bearer ${(await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).json().accessToken}` } })
  t.same(sessions.json().apps, [], 'the user sees no app with access')
})

t.test('re-adding an app of the same id cannot revive a removed grant\'s refresh token', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const { server, baseUrl } = await providerService(t, { env: { DATABASE_URL: databaseUrl } })
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { name: 'Returning App' })
  const stored = await server.store.findOAuthModel('Client', app.clientId, new Date())
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid offline_access', { prompt: 'consent' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })

  t.equal((await cli(databaseUrl, 'clients', 'remove', app.clientId)).code, 0)
  // The operator restores the registration from a backup: the old refresh token stays dead.
  await server.store.upsertOAuthModel('Client', app.clientId, stored?.payload ?? {}, null)
  t.ok(await eventually(async () => await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)) === 'invalid_grant', 6000), 'its refresh token is refused')
})

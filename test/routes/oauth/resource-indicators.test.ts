import { decodeJwt } from 'jose'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { addResourceServer, listResourceServers, removeResourceServer, RESOURCE_SERVER_CACHE_MS } from '../../../core/oauth/resource-servers.js'
import { runAdmin } from '../../../src/admin.js'
import { testClock } from '../../fixtures/clock.js'
import { testDatabaseUrl, testStore } from '../../fixtures/database.js'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, oauthErrorOf, providerService, relyingParty } from '../../fixtures/oauth.js'

// RFC 8707 resource indicators: the team's APIs, registered with their scopes, are what an app may name
// as `resource`; its token is then for that API alone (`aud`), with that API's scopes. Without one, the
// token is for the service itself (PUBLIC_URL), as before. Runs on both backends.

const API = 'https://api.example.com/orders'

async function appWithApi (t: Test, options: Parameters<typeof addClient>[1] = {}) {
  const { server, baseUrl } = await providerService(t)
  await addResourceServer(server.store, { uri: API, scopes: ['orders:read', 'orders:write'] }, new Date())
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { grants: ['authorization_code', 'refresh_token'], ...options })
  const config = await relyingParty(baseUrl, app)
  return { server, baseUrl, user, app, config }
}

t.test('a token asked for a registered API has aud = the API and its scopes; the consent page shows them', async (t) => {
  const { baseUrl, user, config } = await appWithApi(t)
  const request = await authorizationRequest(config, 'openid orders:read', { resource: API })
  const consented: string[][] = []
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, {
    person: user,
    onStep: (step, details) => { if (step === 'consent') consented.push(details.scopes) }
  })
  t.same(consented, [['openid', 'orders:read']], 'the consent page lists the API\'s scope')
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  const claims = decodeJwt(tokens.access_token)
  t.equal(claims.aud, API, 'for the API alone')
  t.equal(claims.scope, 'orders:read', 'with the API\'s scope granted, and no user scope')
  t.equal(tokens.claims()?.sub, String(user.id), 'the ID token is there as before')
  const introspected = await client.tokenIntrospection(config, tokens.access_token)
  t.match(introspected, { active: true, aud: API, scope: 'orders:read' }, 'introspection knows it')
  await t.rejects(client.fetchUserInfo(config, tokens.access_token, String(user.id)), 'a token for an API is not good at userinfo')
})

t.test('a trusted app asking for a registered API gets its token without a consent page', async (t) => {
  const { baseUrl, user, config } = await appWithApi(t, { trusted: true })
  const request = await authorizationRequest(config, 'openid orders:write', { resource: API })
  const steps: string[] = []
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user, onStep: step => steps.push(step) })
  t.same(steps, ['login'])
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.match(decodeJwt(tokens.access_token), { aud: API, scope: 'orders:write' })
})

t.test('client credentials for a registered API: aud = the API, the scopes asked of its own', async (t) => {
  const { server, baseUrl } = await appWithApi(t)
  const machine = await relyingParty(baseUrl, await addClient(server, { grants: ['client_credentials'], redirectUris: [] }))
  const tokens = await client.clientCredentialsGrant(machine, { resource: API, scope: 'orders:write' })
  t.match(decodeJwt(tokens.access_token), { aud: API, scope: 'orders:write' })
  t.match(await client.tokenIntrospection(machine, tokens.access_token), { active: true, aud: API })
})

t.test('an unknown resource is invalid_target, at the authorization and the token endpoints', async (t) => {
  const { server, baseUrl, user, config } = await appWithApi(t)
  const request = await authorizationRequest(config, 'openid', { resource: 'https://unknown.example.com/' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  t.equal(callback.searchParams.get('error'), 'invalid_target')

  const machine = await relyingParty(baseUrl, await addClient(server, { grants: ['client_credentials'], redirectUris: [] }))
  t.equal(await oauthErrorOf(client.clientCredentialsGrant(machine, { resource: 'https://unknown.example.com/' })), 'invalid_target')
  t.equal(await oauthErrorOf(client.clientCredentialsGrant(machine, { resource: `${API}#fragment` })), 'invalid_target', 'a fragment is no resource')
})

t.test('an API removed (by the CLI, beside the service) is invalid_target once RESOURCE_SERVER_CACHE_MS has passed', async (t) => {
  const clock = testClock()
  const { server, baseUrl } = await providerService(t, { clock })
  await addResourceServer(server.store, { uri: API, scopes: ['orders:read'] }, new Date())
  const machine = await relyingParty(baseUrl, await addClient(server, { grants: ['client_credentials'], redirectUris: [] }))
  t.ok(await client.clientCredentialsGrant(machine, { resource: API }))
  // As the CLI removes it: in the store, beside the running service.
  await removeResourceServer(server.store, API, new Date())
  clock.advance(RESOURCE_SERVER_CACHE_MS)
  t.equal(await oauthErrorOf(client.clientCredentialsGrant(machine, { resource: API })), 'invalid_target')
})

t.test('without resource the token is for the service (aud PUBLIC_URL, the user scopes) and userinfo answers it', async (t) => {
  const { baseUrl, user, config } = await appWithApi(t)
  const request = await authorizationRequest(config, 'openid email')
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.match(decodeJwt(tokens.access_token), { aud: baseUrl, scope: 'openid email' })
  t.match(await client.fetchUserInfo(config, tokens.access_token, String(user.id)), { sub: String(user.id), email: user.email })

  const explicit = await authorizationRequest(config, 'openid email', { resource: baseUrl })
  const again = await authorizeInBrowser(baseUrl, new CookieJar(), explicit.url, { person: user })
  const named = await client.authorizationCodeGrant(config, again, { pkceCodeVerifier: explicit.verifier, expectedState: explicit.state })
  t.equal(decodeJwt(named.access_token).aud, baseUrl, 'PUBLIC_URL named as the resource is the same')
})

t.test('the store keeps the registered APIs: added, replaced, listed, removed', async (t) => {
  const store = await testStore(t)
  const now = new Date()
  t.equal(await addResourceServer(store, { uri: API, scopes: ['orders:read'] }, now), false)
  t.equal(await addResourceServer(store, { uri: 'urn:example:billing', scopes: ['bill', 'bill'] }, now), false)
  t.equal(await addResourceServer(store, { uri: API, scopes: ['orders:read', 'orders:write'] }, now), true, 'added again: replaced')
  t.same(await listResourceServers(store, now), [{ uri: API, scopes: ['orders:read', 'orders:write'] }, { uri: 'urn:example:billing', scopes: ['bill'] }])
  t.equal(await removeResourceServer(store, API, now), true)
  t.equal(await removeResourceServer(store, API, now), false)
  t.same(await listResourceServers(store, now), [{ uri: 'urn:example:billing', scopes: ['bill'] }])
})

t.test('account-service resources add, list, remove', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const cli = async (...args: string[]) => {
    const stdout: string[] = []
    const stderr: string[] = []
    const code = await runAdmin(args, { out: line => stdout.push(line), err: line => stderr.push(line), env: { DATABASE_URL: databaseUrl, PUBLIC_URL: 'https://accounts.example.com' } })
    return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') }
  }
  const added = await cli('resources', 'add', API, '--scopes', 'orders:read orders:write')
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^added resource https:\/\/api\.example\.com\/orders with the scopes orders:read orders:write/)
  t.same(JSON.parse((await cli('resources', 'list', '--json')).stdout), [{ resource: API, scopes: ['orders:read', 'orders:write'] }])
  t.match((await cli('resources', 'add', API, '--scopes', 'orders:read')).stdout, /^updated resource/)
  t.match((await cli('resources', 'list')).stdout, `${API}  scopes: orders:read`)

  t.equal((await cli('resources', 'add', API)).code, 2, 'no scopes')
  t.equal((await cli('resources', 'add', 'not a uri', '--scopes', 'read')).code, 2, 'not an absolute URI')
  t.equal((await cli('resources', 'add', `${API}#x`, '--scopes', 'read')).code, 2, 'a fragment')
  t.equal((await cli('resources', 'add', API, '--scopes', 'read openid')).code, 2, 'a user scope')
  t.equal((await cli('resources', 'add', 'https://accounts.example.com', '--scopes', 'read')).code, 1, 'PUBLIC_URL itself')

  t.equal((await cli('resources', 'remove', API)).code, 0)
  t.equal((await cli('resources', 'remove', API)).code, 1, 'not registered')
  t.match((await cli('resources', 'list')).stdout, /^no resources/)
})

import * as client from 'openid-client'
import t from 'tap'
import { build } from '../../fixtures/build.js'
import { testDatabaseUrl } from '../../fixtures/database.js'
import { registerUser } from '../../fixtures/factories.js'
import { eventually } from '../../fixtures/eventually.js'
import { freePort } from '../../fixtures/http.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, oauthErrorOf, relyingParty } from '../../fixtures/oauth.js'

// Several instances over one store, behind one address (PUBLIC_URL): a flow begun on one goes on on
// another, and a grant revoked on one is refused by the other. Runs on SQLite (a shared file) and,
// in the PostgreSQL pass, on PostgreSQL.

t.test('two instances share an authorization flow, its grant and its revocation', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const ports = [await freePort(), await freePort()]
  const issuer = `http://localhost:${ports[0]}`
  const instances = []
  for (const port of ports) {
    const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, PUBLIC_URL: issuer, COOKIE_SECURE: 'false' } })
    await server.listen({ port, host: 'localhost' })
    instances.push({ server, baseUrl: `http://localhost:${port}` })
  }
  const [first, second] = instances
  const user = await registerUser(first.server, 'header')
  const app = await addClient(first.server, { grants: ['authorization_code', 'refresh_token'] })
  const atFirst = await relyingParty(first.baseUrl, app)
  // The same app as the second instance serves it (a load balancer sends each request anywhere).
  const atSecond = new client.Configuration({ ...atFirst.serverMetadata() as client.ServerMetadata, token_endpoint: `${second.baseUrl}/oauth/token`, introspection_endpoint: `${second.baseUrl}/oauth/introspect` }, app.clientId, app.clientSecret)
  client.allowInsecureRequests(atSecond)

  const request = await authorizationRequest(atFirst, 'openid email offline_access', { prompt: 'consent' })
  // Each step of the browser's goes to the other instance than the step before.
  const callback = await authorizeInBrowser(issuer, new CookieJar(), request.url, { person: user, instances: [first.baseUrl, second.baseUrl] })
  const tokens = await client.authorizationCodeGrant(atSecond, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.sub, String(user.id), 'the code minted by one instance is exchanged at the other')
  t.equal(tokens.claims()?.iss, issuer)

  await client.tokenRevocation(atFirst, tokens.refresh_token as string)
  t.equal(await oauthErrorOf(client.refreshTokenGrant(atSecond, tokens.refresh_token as string)), 'invalid_grant', 'revoked at one, refused at the other')
  // The other instance follows the revocation log (every 200 ms); within that its access token is no longer active there.
  t.ok(await eventually(async () => (await client.tokenIntrospection(atSecond, tokens.access_token)).active === false), 'and its access token soon is no longer active there')
})

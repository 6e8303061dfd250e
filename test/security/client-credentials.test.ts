import { createLocalJWKSet, jwtVerify } from 'jose'
import * as client from 'openid-client'
import t from 'tap'
import { addClient, oauthErrorOf, providerService, relyingParty } from '../fixtures/oauth.js'

// Issue 33: a client-credentials token is the client's own, with no user behind it (finding 16: no user
// scopes, no `sub` that reads as a user's).

t.test('client credentials: openid, email, profile and offline_access are refused (invalid_scope); the token is no user\'s', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { name: 'Machine', grants: ['client_credentials'], redirectUris: [] })
  const config = await relyingParty(baseUrl, app)
  for (const scope of ['openid', 'openid email profile', 'email', 'profile', 'offline_access']) {
    t.equal(await oauthErrorOf(client.clientCredentialsGrant(config, { scope })), 'invalid_scope', `scope ${scope}`)
  }

  const tokens = await client.clientCredentialsGrant(config)
  const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()), { issuer: baseUrl })
  t.equal(payload.scope, undefined, 'no scope')
  t.equal(payload.client_id, app.clientId)
  t.notMatch(String(payload.sub), /^[0-9]+$/, 'sub (the client id) never reads as a user id')
  const userinfo = await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  t.equal(userinfo.status, 401, 'userinfo refuses it')
})

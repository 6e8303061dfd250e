import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list'
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose'
import * as client from 'openid-client'
import t from 'tap'
import { runAdmin } from '../../src/admin.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { eventually } from '../fixtures/eventually.js'
import { addClient, oauthErrorOf, providerService, relyingParty } from '../fixtures/oauth.js'

// Issue 33: a client-credentials token is the client's own, with no user behind it (finding 16: no user
// scopes, no `sub` that reads as a user's), and revoking it works as for every other token (finding 10):
// it gets a Token Status List entry of its own, which RFC 7009 revocation and `clients remove` set.

/** The token's bit in the status list its `status` claim names, as an API checking it reads it. */
async function statusBit (accessToken: string): Promise<number> {
  const status = decodeJwt(accessToken).status as { status_list: { idx: number, uri: string } } | undefined
  if (status === undefined) throw new Error('the token has no status claim')
  const { idx, uri } = status.status_list
  return getListFromStatusListJWT(await (await fetch(uri, { headers: { accept: 'application/statuslist+jwt' } })).text()).getStatus(idx)
}

t.test('client credentials: openid, email, profile, offline_access and organizations are refused (invalid_scope); the token is no user\'s', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { name: 'Machine', grants: ['client_credentials'], redirectUris: [] })
  const config = await relyingParty(baseUrl, app)
  for (const scope of ['openid', 'openid email profile', 'email', 'profile', 'offline_access', 'organizations']) {
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

t.test('revoking a client-credentials token (RFC 7009) makes it inactive at introspection and sets its status bit; another token of the client stays good', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { name: 'Machine', grants: ['client_credentials'], redirectUris: [] })
  const config = await relyingParty(baseUrl, app)
  const revoked = (await client.clientCredentialsGrant(config)).access_token
  const kept = (await client.clientCredentialsGrant(config)).access_token
  t.match(await client.tokenIntrospection(config, revoked), { active: true, client_id: app.clientId })
  t.equal(await statusBit(revoked), 0)

  const other = await relyingParty(baseUrl, await addClient(server, { name: 'Other', grants: ['client_credentials'], redirectUris: [] }))
  t.equal(await oauthErrorOf(client.tokenRevocation(other, revoked)), 'unauthorized_client', 'another client cannot revoke it (RFC 7009 §2.1)')
  t.match(await client.tokenIntrospection(config, revoked), { active: true }, 'it stays active')

  await client.tokenRevocation(config, revoked)
  t.match(await client.tokenIntrospection(config, revoked), { active: false }, 'inactive at introspection')
  // The list is signed again at most once a second (core/revocations/status-lists.ts).
  t.ok(await eventually(async () => await statusBit(revoked) === 1, 3000), 'an API checking the status list refuses it')
  t.match(await client.tokenIntrospection(config, kept), { active: true }, 'the client\'s other token is untouched')
  t.equal(await statusBit(kept), 0)
})

t.test('clients remove ends the client\'s client-credentials tokens too', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const { server, baseUrl } = await providerService(t, { env: { DATABASE_URL: databaseUrl } })
  const app = await addClient(server, { name: 'Machine', grants: ['client_credentials'], redirectUris: [] })
  const token = (await client.clientCredentialsGrant(await relyingParty(baseUrl, app))).access_token
  t.equal(await statusBit(token), 0)
  t.equal(await runAdmin(['clients', 'remove', app.clientId], { out: () => {}, err: () => {}, env: { DATABASE_URL: databaseUrl } }), 0)
  t.ok(await eventually(async () => await statusBit(token) === 1), 'its bit is set')
})

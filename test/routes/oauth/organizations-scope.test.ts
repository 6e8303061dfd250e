import * as client from 'openid-client'
import t, { type Test } from 'tap'
import type { Variant } from '../../../core/config.js'
import { registerUser } from '../../fixtures/factories.js'
import { decodePart } from '../../fixtures/jwt.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, providerService, relyingParty } from '../../fixtures/oauth.js'

// Issue 37: the `organizations` scope puts every membership of the user in the ID token, userinfo and the
// app's access token, as a relying party (openid-client) reads them.

async function signedInApp (t: Test, variant: Variant, memberships: (server: Awaited<ReturnType<typeof providerService>>['server'], userId: number) => Promise<void>) {
  const { server, baseUrl } = await providerService(t, { variant })
  const user = await registerUser(server, variant)
  await memberships(server, user.id)
  const redirectUri = 'http://127.0.0.1:4999/callback'
  const app = await addClient(server, { redirectUris: [redirectUri], public: true })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid email organizations', { redirect_uri: redirectUri })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  return { server, baseUrl, config, user, tokens }
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: the organizations scope lists every membership in the ID token, userinfo and the access token`, async (t) => {
    let orgs: Array<{ id: number, slug: string }> = []
    const { server, config, user, tokens } = await signedInApp(t, variant, async (server, userId) => {
      orgs = [
        await server.store.createOrganisation({ name: 'Acme', slug: 'acme', ownerId: userId }, new Date()),
        await server.store.createOrganisation({ name: 'Globex', slug: 'globex', ownerId: userId }, new Date())
      ]
    })
    const expected = [{ id: orgs[0].id, slug: 'acme', role: 'owner' }, { id: orgs[1].id, slug: 'globex', role: 'owner' }]
    t.same(tokens.claims()?.organizations, expected, 'the ID token, both memberships (not only the first)')
    t.equal(tokens.claims()?.email, user.email, 'with the other scopes\' claims')
    const accessClaims = decodePart(tokens.access_token, 1) as Record<string, unknown>
    t.same(accessClaims.organizations, expected, 'the app\'s access token')
    t.match(accessClaims.scope, /\borganizations\b/)
    const userinfo = await client.fetchUserInfo(config, tokens.access_token, String(user.id))
    t.same(userinfo.organizations, expected, 'userinfo')

    // Userinfo reads the memberships at each call: a membership ended shows at once.
    await server.store.deleteOrganisation(orgs[1].id)
    t.same((await client.fetchUserInfo(config, tokens.access_token, String(user.id))).organizations, [expected[0]], 'userinfo after a deletion')
  })

  t.test(`${variant} variant: a user with no membership gets an empty list`, async (t) => {
    const { config, user, tokens } = await signedInApp(t, variant, async () => {})
    t.same(tokens.claims()?.organizations, [])
    t.same((decodePart(tokens.access_token, 1) as Record<string, unknown>).organizations, [])
    t.same((await client.fetchUserInfo(config, tokens.access_token, String(user.id))).organizations, [])
  })
}

t.test('discovery lists the scope and its claim; a token without the scope carries no organizations', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const discovery = await (await fetch(`${baseUrl}/.well-known/openid-configuration`)).json() as { scopes_supported: string[], claims_supported: string[] }
  t.ok(discovery.scopes_supported.includes('organizations'), 'scopes_supported')
  t.ok(discovery.claims_supported.includes('organizations'), 'claims_supported')

  const user = await registerUser(server, 'header')
  await server.store.createOrganisation({ name: 'Acme', slug: 'acme', ownerId: user.id }, new Date())
  const redirectUri = 'http://127.0.0.1:4999/callback'
  const app = await addClient(server, { redirectUris: [redirectUri], public: true })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid email', { redirect_uri: redirectUri })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.organizations, undefined, 'not in the ID token')
  t.equal((decodePart(tokens.access_token, 1) as Record<string, unknown>).organizations, undefined, 'not in the access token')
  t.equal((await client.fetchUserInfo(config, tokens.access_token, String(user.id))).organizations, undefined, 'not at userinfo')
})

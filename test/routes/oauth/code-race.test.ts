import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { registerUser } from '../../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, oauthErrorOf, providerService, relyingParty } from '../../fixtures/oauth.js'

// A single-use credential spent by several requests at once (RFC 6749 §4.1.2: a code is used once; RFC 9700
// §4.14.2: a rotated refresh token's reuse ends the grant). oidc-provider reads the model, checks it unconsumed,
// and consumes it requests later: on PostgreSQL (real I/O between the two) three of four exchanges of one code
// got tokens before the store's consumption became atomic (core/oauth/adapter.ts consume). In one SQLite process
// the steps run without a break and the race cannot start; two instances on one file could, as on PostgreSQL.

const AT_ONCE = 4

async function signedIn (t: Test, options: Parameters<typeof addClient>[1]) {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { grants: ['authorization_code', 'refresh_token'], ...options })
  const config = await relyingParty(baseUrl, app)
  const request = await authorizationRequest(config, 'openid offline_access', { prompt: 'consent' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const exchange = async () => await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  return { config, exchange }
}

t.test('one code exchanged by four requests at once: at most one gets tokens, and a replay ends the grant it made', async (t) => {
  const { config, exchange } = await signedIn(t, {})
  const answers = await Promise.allSettled(Array.from({ length: AT_ONCE }, exchange))
  const issued = answers.flatMap((answer) => answer.status === 'fulfilled' ? [answer.value] : [])
  t.ok(issued.length <= 1, `at most one request gets tokens (${issued.length} did)`)
  for (const answer of answers) {
    if (answer.status === 'rejected') t.equal(await oauthErrorOf(Promise.reject(answer.reason)), 'invalid_grant', 'the others are invalid_grant')
  }
  // Whichever request lost, the grant has ended (a loser within the race revoked it, as a replay after it does).
  for (const tokens of issued) t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant', 'the tokens issued from the code stop working')
})

t.test('one rotated refresh token used by four requests at once: at most one gets new tokens, and the grant ends', async (t) => {
  const { config, exchange } = await signedIn(t, { public: true })
  const { refresh_token: used } = await exchange()
  const answers = await Promise.allSettled(Array.from({ length: AT_ONCE }, async () => await client.refreshTokenGrant(config, used as string)))
  const rotated = answers.flatMap((answer) => answer.status === 'fulfilled' ? [answer.value] : [])
  t.ok(rotated.length <= 1, `at most one request rotates it (${rotated.length} did)`)
  for (const answer of answers) {
    if (answer.status === 'rejected') t.equal(await oauthErrorOf(Promise.reject(answer.reason)), 'invalid_grant', 'the others are invalid_grant')
  }
  for (const tokens of rotated) t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant', 'and the reuse ended the grant: the new token too')
})

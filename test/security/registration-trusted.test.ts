import * as client from 'openid-client'
import t from 'tap'
import type { Variant } from '../../core/config.js'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, providerService, REDIRECT_URI, relyingParty } from '../fixtures/oauth.js'

// Issue 33, finding 4: `trusted` (no consent page) is for operators (`clients add --trusted`); the
// holder of OAUTH_REGISTRATION_TOKEN registering or updating a client cannot give it to itself.

const TOKEN = 'registration-token-0123456789'

for (const variant of ['header', 'cookie'] as Variant[]) {
  t.test(`${variant}: a client registered with trusted: true is not trusted; a signed-in user still sees the consent page`, async (t) => {
    const { server, baseUrl } = await providerService(t, { variant, env: { OAUTH_REGISTRATION_TOKEN: TOKEN } })
    const user = await registerUser(server, variant)
    // The user is signed in to the provider (single sign-on) through another app first.
    const jar = new CookieJar()
    const first = await relyingParty(baseUrl, await addClient(server, { name: 'First App' }))
    await authorizeInBrowser(baseUrl, jar, (await authorizationRequest(first)).url, { variant, person: user })

    const registered = await client.dynamicClientRegistration(new URL(baseUrl),
      { client_name: 'Evil App', redirect_uris: [REDIRECT_URI], trusted: true }, undefined,
      { initialAccessToken: TOKEN, execute: [client.allowInsecureRequests] })
    t.not(registered.clientMetadata().trusted, true, 'the registration answer does not say trusted')
    const stored = await server.store.findOAuthModel('Client', registered.clientMetadata().client_id, new Date())
    t.not(stored?.payload.trusted, true, 'the stored client is not trusted')

    const steps: string[] = []
    const request = await authorizationRequest(registered)
    const arrived = await authorizeInBrowser(baseUrl, jar, request.url, { variant, person: user, onStep: step => steps.push(step), consent: false })
    t.same(steps, ['consent'], 'the consent page is shown')
    t.equal(arrived.searchParams.get('code'), null, 'no code without the user\'s click')
    t.equal(arrived.searchParams.get('error'), 'access_denied')
  })
}

t.test('an operator\'s client (clients add --trusted) is still trusted', async (t) => {
  const { server, baseUrl } = await providerService(t, { env: { OAUTH_REGISTRATION_TOKEN: TOKEN } })
  const user = await registerUser(server, 'header')
  const trusted = await relyingParty(baseUrl, await addClient(server, { name: 'First-party', trusted: true }))
  const steps: string[] = []
  const arrived = await authorizeInBrowser(baseUrl, new CookieJar(), (await authorizationRequest(trusted)).url, { person: user, onStep: step => steps.push(step) })
  t.same(steps, ['login'], 'a sign-in, no consent page')
  t.ok(arrived.searchParams.get('code'))
})

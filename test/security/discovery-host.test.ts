import * as client from 'openid-client'
import t from 'tap'
import { addClient, providerService, relyingParty } from '../fixtures/oauth.js'

// Issue 33, finding 9: every URL the provider builds (the discovery document's endpoints, the device
// flow's verification URI, redirects) follows PUBLIC_URL, never the request's Host or X-Forwarded-*
// headers, as Keycloak's `hostname` setting pins them. A cache in front would otherwise keep a
// document that sends apps' users and secrets to another host.

/** Every string of the document that is a URL (the endpoints, the issuer). */
function urlsOf (document: Record<string, unknown>): string[] {
  return Object.values(document).filter((value): value is string => typeof value === 'string' && /^[a-z][a-z0-9+.-]*:\/\//i.test(value))
}

t.test('the discovery document names only PUBLIC_URL\'s endpoints, whatever the Host', async (t) => {
  const { server, baseUrl } = await providerService(t)
  for (const headers of [{ host: 'evil.example' }, { host: 'evil.example:8443', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }]) {
    const answer = await server.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers })
    t.equal(answer.statusCode, 200)
    const urls = urlsOf(answer.json())
    t.ok(urls.length > 8, 'the endpoints are there')
    t.same(urls.filter(url => !url.startsWith(`${baseUrl}/`) && url !== baseUrl), [], `no URL of another host (${JSON.stringify(headers)})`)
  }
})

t.test('behind a trusted proxy too, X-Forwarded-Host and X-Forwarded-Proto do not move the endpoints', async (t) => {
  const { server, baseUrl } = await providerService(t, { env: { TRUST_PROXY: 'true' } })
  const answer = await server.inject({
    method: 'GET',
    url: '/.well-known/openid-configuration',
    headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }
  })
  t.equal(answer.statusCode, 200)
  t.same(urlsOf(answer.json()).filter(url => !url.startsWith(`${baseUrl}/`) && url !== baseUrl), [])
})

t.test('the device flow\'s verification URI and the authorization endpoint\'s redirects follow PUBLIC_URL', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { name: 'TV', public: true, grants: ['urn:ietf:params:oauth:grant-type:device_code'] })
  const device = await server.inject({
    method: 'POST',
    url: '/oauth/device/auth',
    headers: { host: 'evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ client_id: app.clientId, scope: 'openid' }).toString()
  })
  t.equal(device.statusCode, 200)
  t.ok(device.json().verification_uri.startsWith(`${baseUrl}/`), device.json().verification_uri)
  t.ok(device.json().verification_uri_complete.startsWith(`${baseUrl}/`))

  const config = await relyingParty(baseUrl, await addClient(server))
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: 'http://127.0.0.1:4999/callback', scope: 'openid', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256'
  })
  const authorize = await server.inject({ method: 'GET', url: `${url.pathname}${url.search}`, headers: { host: 'evil.example' } })
  const location = new URL(authorize.headers.location as string, baseUrl)
  t.equal(location.origin, baseUrl, `the interaction is on PUBLIC_URL (${authorize.headers.location as string})`)
})

t.test('a method the sign-in pages do not serve is the service\'s 404, whatever the Host (the fuzz test found the OAuth error shape there)', async (t) => {
  const { server } = await providerService(t)
  for (const host of ['127.0.0.1', '\t']) {
    const answer = await server.inject({ method: 'OPTIONS', url: '/oauth/interaction/some-uid', headers: { host } })
    t.equal(answer.statusCode, 404, `Host ${JSON.stringify(host)}`)
    t.same(Object.keys(answer.json()).sort(), ['code', 'error', 'message', 'statusCode'], 'the service\'s error shape')
  }
})

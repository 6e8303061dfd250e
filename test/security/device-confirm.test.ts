import { createHash } from 'node:crypto'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { registerUser } from '../fixtures/factories.js'
import { addClient, authorizationRequest, authorizeInBrowser, browse, CookieJar, oauthErrorOf, providerService, REDIRECT_URI, relyingParty } from '../fixtures/oauth.js'

// Issue 33, finding 5: a phished user code must not go straight to "your device is signed in". A device
// flow always shows the consent page, which names the app and asks (RFC 8628 §5.4), even when the user's
// grant to the app exists or the app is trusted (where an authorization request asks nothing).

const DEVICE_GRANTS = ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'] as const

/** The hidden and named fields of the page's form with this id (else its first form), as the browser would post them. */
function formFields (html: string, formId?: string): URLSearchParams {
  const id = formId === undefined ? '' : `id="${formId.replace('.', '\\.')}"`
  const form = new RegExp(`<form[^>]*${id}[^>]*>([\\s\\S]*?)</form>`).exec(html)
  if (form === null) throw new Error(`no form ${formId} in ${html}`)
  const fields = new URLSearchParams()
  for (const input of form[1].matchAll(/<input\b[^>]*>/g)) {
    const name = /name="([^"]*)"/.exec(input[0])?.[1]
    if (name !== undefined) fields.set(name, /value="([^"]*)"/.exec(input[0])?.[1] ?? '')
  }
  return fields
}

async function postForm (jar: CookieJar, url: string, fields: URLSearchParams): Promise<Response> {
  return await browse(jar, url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields.toString() })
}

async function deviceCase (t: Test, { trusted }: { trusted: boolean }) {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const app = await addClient(server, { name: 'Living Room TV', public: true, trusted, grants: [...DEVICE_GRANTS] })
  const config = await relyingParty(baseUrl, app)
  // The user is signed in to the provider and, unless the app is trusted, has let the app in before.
  const jar = new CookieJar()
  const earlier = await authorizationRequest(config, 'openid email', { redirect_uri: REDIRECT_URI })
  t.ok((await authorizeInBrowser(baseUrl, jar, earlier.url, { person: user })).searchParams.get('code'), 'signed in, the app let in')

  // The attacker's device starts the flow and phishes the user into typing its code.
  const device = await client.initiateDeviceAuthorization(config, { scope: 'openid email' })
  const codePage = await browse(jar, device.verification_uri)
  const fields = formFields(await codePage.text(), 'op.deviceInputForm')
  fields.set('user_code', device.user_code)
  const answer = await postForm(jar, device.verification_uri, fields)
  const location = answer.headers.get('location')
  t.match(location, /^\/oauth\/interaction\//, 'on to the service\'s page, not "your device is signed in"')
  const details = await (await browse(jar, new URL(`${location ?? ''}/details`, baseUrl).href)).json() as { prompt: string, client: { name: string } }
  t.equal(details.prompt, 'consent', 'the consent page')
  t.equal(details.client.name, 'Living Room TV', 'naming the app')
  const poll = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.device_code, client_id: app.clientId })
  })
  t.equal((await poll.json()).error, 'authorization_pending', 'the device is not signed in before the user allows it')

  // Allowed: then, and only then, the device is signed in.
  const steps: string[] = []
  await authorizeInBrowser(baseUrl, jar, new URL(location ?? '', baseUrl), { person: user, onStep: step => steps.push(step) })
  t.same(steps, ['consent'])
  const tokens = await client.pollDeviceAuthorizationGrant(config, { ...device, interval: 0 })
  t.equal(tokens.claims()?.sub, String(user.id))
}

t.test('a device link with the code in it shows the confirmation naming the app and the code; Cancel refuses the device', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'TV', public: true, grants: [...DEVICE_GRANTS] }))
  const device = await client.initiateDeviceAuthorization(config, { scope: 'openid' })
  const jar = new CookieJar()
  // The link's page posts the code at once (oidc-provider's form_post), without confirm, by an inline script
  // the CSP allows by its hash.
  const link = await browse(jar, device.verification_uri_complete ?? '')
  const linkPage = await link.text()
  const script = /<script>([\s\S]*?)<\/script>/.exec(linkPage)?.[1] ?? ''
  const csp = link.headers.get('content-security-policy') ?? ''
  t.match(csp, `'sha256-${createHash('sha256').update(script).digest('base64')}'`, 'the CSP runs its script')
  t.match(csp, /form-action 'self'/, 'and lets it post')
  const fields = formFields(linkPage)
  const confirmation = await (await postForm(jar, device.verification_uri, fields)).text()
  t.match(confirmation, /TV/)
  t.match(confirmation, new RegExp(device.user_code))
  t.match(confirmation, /<button[^>]*name="abort"[^>]*>Cancel<\/button>/, 'a Cancel button')
  const cancel = formFields(confirmation, 'op.deviceConfirmForm')
  cancel.delete('confirm')
  cancel.set('abort', 'yes')
  await postForm(jar, device.verification_uri, cancel)
  t.equal(await oauthErrorOf(client.pollDeviceAuthorizationGrant(config, { ...device, interval: 0 })), 'access_denied')
})

t.test('a user code of an app the user has let in shows the app\'s name and asks to confirm', async (t) => {
  await deviceCase(t, { trusted: false })
})

t.test('a user code of a trusted app shows the app\'s name and asks to confirm', async (t) => {
  await deviceCase(t, { trusted: true })
})

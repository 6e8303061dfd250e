import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { sharedChromium, skipWithoutChromium, watchedPage } from '../../fixtures/browser.js'
import { registerUser } from '../../fixtures/factories.js'
import { freePort } from '../../fixtures/http.js'
import { addClient, authorizationRequest, authorizeInBrowser, browse, CookieJar, providerService, REDIRECT_URI, relyingParty } from '../../fixtures/oauth.js'

// Issue 34, item 2: response_mode=form_post answers with oidc-provider's page that posts the code to the
// app by an inline script. The page gets a CSP allowing exactly that script (its hash) and a form-action
// to the app's redirect URI; under the API's CSP (default-src 'none') the page stayed blank.

/** The CSP's directives by name. */
function directives (csp: string | null): Map<string, string[]> {
  return new Map((csp ?? '').split(';').map(part => part.trim().split(/\s+/)).filter(([name]) => name !== '').map(([name, ...values]) => [name, values]))
}

t.test('the form_post page: a CSP whose script hash is the page\'s inline script and whose form-action is the redirect URI', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const person = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server))
  const jar = new CookieJar()
  // Signed in and consented once; the next authorization is answered at once, with the page.
  await authorizeInBrowser(baseUrl, jar, (await authorizationRequest(config, 'openid')).url, { person })
  const request = await authorizationRequest(config, 'openid', { response_mode: 'form_post' })
  const page = await browse(jar, request.url.href)
  t.equal(page.status, 200)
  const html = await page.text()
  const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] ?? ''
  t.match(script, /submit\(\)/, 'the page posts itself')
  t.match(html, new RegExp(`<form method="post" action="${REDIRECT_URI}">`))
  t.match(html, /name="code"/)

  const csp = directives(page.headers.get('content-security-policy'))
  t.same(csp.get('script-src'), [`'sha256-${createHash('sha256').update(script).digest('base64')}'`], 'that script and no other')
  t.same(csp.get('form-action'), [REDIRECT_URI], 'the form posts to the redirect URI alone')
  t.same(csp.get('default-src'), ["'none'"])
  t.same(csp.get('frame-ancestors'), ["'none'"])

  const queryMode = await browse(jar, (await authorizationRequest(config, 'openid')).url.href)
  t.equal(queryMode.status, 303, 'the query response mode still redirects')
  t.notMatch(queryMode.headers.get('content-security-policy') ?? '', /script-src/, 'with the API\'s CSP')
})

/** The app: it records what is posted to /callback and sends the browser on to its own /home, as apps do. */
async function appReceivingPosts (t: Test): Promise<{ origin: string, posted: Promise<URLSearchParams> }> {
  const port = await freePort()
  let received: (body: URLSearchParams) => void = () => {}
  const posted = new Promise<URLSearchParams>(resolve => { received = resolve })
  const site = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/callback') {
        received(new URLSearchParams(Buffer.concat(chunks).toString()))
        response.writeHead(303, { location: '/home' }).end()
        return
      }
      response.end('the app')
    })
  })
  await new Promise<void>(resolve => site.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => { site.closeAllConnections(); site.close(() => resolve()) }))
  return { origin: `http://127.0.0.1:${port}`, posted }
}

t.test('in Chromium: with response_mode=form_post the browser posts the code to the app, which exchanges it', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await appReceivingPosts(t)
  const person = await registerUser(server, 'header')
  const redirectUri = `${app.origin}/callback`
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'Form Post App', redirectUris: [redirectUri] }))
  const request = await authorizationRequest(config, 'openid email', { redirect_uri: redirectUri, response_mode: 'form_post' })

  const { page, violations } = await watchedPage(await sharedChromium(t), t)
  await page.goto(request.url.href)
  await page.getByLabel('Email').fill(person.email)
  await page.getByLabel('Password').fill(person.password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.getByRole('button', { name: 'Allow' }).click()
  const posted = await Promise.race([app.posted, new Promise<undefined>(resolve => setTimeout(resolve, 15_000))])
  t.ok(posted?.get('code'), 'the app received the code by POST')
  t.equal(posted?.get('state'), request.state)
  await page.waitForURL(`${app.origin}/home`)
  t.same(await violations(), [], 'nothing refused under the CSP')

  const tokens = await client.authorizationCodeGrant(config, new URL(`${redirectUri}?${posted?.toString() ?? ''}`), { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.sub, String(person.id))
})

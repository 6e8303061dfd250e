import * as client from 'openid-client'
import type { Page } from 'playwright-core'
import t from 'tap'
import { sharedChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import type { FastifyInstance } from 'fastify'
import type { Variant } from '../../core/config.js'
import { loggedInUser, registerUser } from '../fixtures/factories.js'
import { codeAt, enableTotp } from '../fixtures/mfa.js'
import { build } from '../fixtures/build.js'
import { freePort } from '../fixtures/http.js'
import { providerSettings, startOpenIdProvider } from '../fixtures/openid-provider.js'
import { startMailbox, type Mailbox } from '../fixtures/mailbox.js'
import { addClient, appSite, authorizationRequest, relyingParty } from '../fixtures/oauth.js'

/** One browser for the file's tests (each has its own context). */
const chromium = () => sharedChromium(t)

interface Site {
  /** The app's site (every case registers its own client there, so the apps stay apart). */
  app: string
  services: Record<Variant, { server: FastifyInstance, baseUrl: string }>
  /** Where both services' mail arrives (the sign-in codes). */
  mailbox: Mailbox
}

let site: Promise<Site> | undefined

/**
 * One service of each variant for the whole file, both listening on localhost with the upstream
 * provider "corp" (Hedy's account), and one app site: each case needs only a fresh user, a fresh
 * client and its own browser context, and a service costs about a second of CPU to build. Built on
 * first use (nothing starts when Chromium is missing) and closed in the file's teardown.
 */
function sharedSite (): Promise<Site> {
  site ??= (async () => {
    const ports = { cookie: await freePort(), header: await freePort() }
    // Nothing listens on either yet: the second pick may be the first port again.
    while (ports.header === ports.cookie) ports.header = await freePort()
    const callbacks = Object.values(ports).map(port => `http://localhost:${port}/auth/oidc/corp/callback`)
    const upstream = await startOpenIdProvider(t, callbacks)
    const mailbox = await startMailbox(t)
    upstream.accounts.set('hedy', { email: 'hedy@example.test', email_verified: true, given_name: 'Hedy', family_name: 'Lamarr', preferred_username: 'hedy' })
    const service = async (variant: Variant) => {
      const baseUrl = `http://localhost:${ports[variant]}`
      const server = await build(t, { variant, env: { PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', SMTP_URL: mailbox.smtpUrl, OIDC_PROVIDERS: 'corp', ...providerSettings('corp', upstream, 'Corp') } })
      await server.listen({ port: ports[variant], host: 'localhost' })
      return { server, baseUrl }
    }
    return { app: await appSite(t), services: { cookie: await service('cookie'), header: await service('header') }, mailbox }
  })()
  return site
}

/** The shared service of `variant` and the app's site. */
async function sharedService (variant: Variant) {
  const { app, services, mailbox } = await sharedSite()
  return { ...services[variant], app, mailbox }
}

/** On the device page, its code entered: Continue, the sign-in page with the password, Allow, until the page says the device may go on. */
async function confirmDevice (page: Page, user: { email: string, password: string }) {
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.getByLabel('Email').fill(user.email)
  await page.getByLabel('Password').fill(user.password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.getByRole('button', { name: 'Allow' }).click()
  await page.getByText(/you can close this page/i).waitFor()
}

// The provider's browser steps in Chromium: the service's own sign-in, second-factor and consent
// pages, the device verification page, and RP-initiated logout, under the pages' strict CSP.

t.test('in Chromium: sign-in page (password, then a TOTP code), consent page with Allow, back at the app with a code (cookie variant)', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl, app } = await sharedService('cookie')
  const session = await loggedInUser(server, 'cookie', { first_name: 'Katherine', last_name: 'Johnson' })
  const { secret } = await enableTotp(server, 'cookie', session)
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'Orbit Tracker', redirectUris: [`${app}/callback`] }))
  const request = await authorizationRequest(config, 'openid email profile', { redirect_uri: `${app}/callback` })

  const browser = await chromium()
  const { page, violations } = await watchedPage(browser, t)
  await page.goto(request.url.href)
  await page.getByLabel('Email').fill(session.user.email)
  await page.getByLabel('Password').fill(session.user.password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.getByLabel('Code', { exact: true }).fill(codeAt(secret, 1))
  await page.getByRole('button', { name: /verify/i }).click()

  await page.getByRole('button', { name: 'Allow' }).waitFor()
  const consent = await page.locator('main').innerText()
  t.match(consent, /Orbit Tracker/, 'the consent page names the app')
  t.match(consent, /email address/, 'and what it may see')
  await Promise.all([page.waitForURL(`${app}/callback?**`), page.getByRole('button', { name: 'Allow' }).click()])

  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.sub, String(session.user.id))
  t.match(await client.fetchUserInfo(config, tokens.access_token, String(session.user.id)), { given_name: 'Katherine', preferred_username: session.user.body.username })
  t.same(await violations(), [], 'nothing refused under the CSP')

  // The console lists the app, and revoking it there ends its access.
  await page.goto(`${baseUrl}/account`)
  const apps = page.locator('#apps li', { hasText: 'Orbit Tracker' })
  await apps.waitFor()
  await apps.getByRole('button', { name: /revoke/i }).click()
  await page.locator('#apps-message', { hasText: 'no longer has access' }).waitFor()
  t.match(await client.tokenIntrospection(config, tokens.access_token), { active: false }, 'its tokens are revoked')
})

t.test('in Chromium: the deny button sends the app access_denied', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl, app } = await sharedService('header')
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'Nosy App', redirectUris: [`${app}/callback`] }))
  const request = await authorizationRequest(config, 'openid email profile', { redirect_uri: `${app}/callback` })
  const browser = await chromium()
  const { page, violations } = await watchedPage(browser, t)
  await page.goto(request.url.href)
  await page.getByLabel('Email').fill(user.email)
  await page.getByLabel('Password').fill(user.password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await Promise.all([page.waitForURL(`${app}/callback?**`), page.getByRole('button', { name: 'Deny' }).click()])
  t.equal(new URL(page.url()).searchParams.get('error'), 'access_denied')
  t.same(await violations(), [])
})

t.test('in Chromium: "Email me a code" on the sign-in page signs in, and signs up an unknown address, through consent to the app (header variant: the verify\'s access token tells the interaction)', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl, app, mailbox } = await sharedService('header')
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'Mail App', redirectUris: [`${app}/callback`] }))
  const request = await authorizationRequest(config, 'openid email', { redirect_uri: `${app}/callback` })
  const browser = await chromium()
  const { page, violations } = await watchedPage(browser, t)
  await page.goto(request.url.href)
  await page.getByLabel('Email').fill(user.email)
  await page.getByRole('button', { name: 'Email me a code' }).click()
  const code = /email_code=(\d{6})/.exec((await mailbox.next(user.email, 'Your sign-in code')).text ?? '')?.[1] ?? ''
  await page.getByLabel('Code from the mail').fill(code)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await Promise.all([page.waitForURL(`${app}/callback?**`), page.getByRole('button', { name: 'Allow' }).click()])
  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(tokens.claims()?.sub, String(user.id))

  // An address with no account: the header variant asks for a name and no username.
  const again = await authorizationRequest(config, 'openid email', { redirect_uri: `${app}/callback` })
  const fresh = await watchedPage(browser, t)
  await fresh.page.goto(again.url.href)
  await fresh.page.getByLabel('Email').fill('mary@example.test')
  await fresh.page.getByRole('button', { name: 'Email me a code' }).click()
  const newcomer = /email_code=(\d{6})/.exec((await mailbox.next('mary@example.test', 'Your sign-in code')).text ?? '')?.[1] ?? ''
  await fresh.page.getByLabel('Code from the mail').fill(newcomer)
  await fresh.page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await fresh.page.getByLabel('First name').fill('Mary')
  t.ok(await fresh.page.locator('#signup-username').isHidden(), 'no username asked in the header variant')
  await fresh.page.getByLabel('Last name').fill('Jackson')
  await fresh.page.getByRole('button', { name: 'Create the account' }).click()
  await Promise.all([fresh.page.waitForURL(`${app}/callback?**`), fresh.page.getByRole('button', { name: 'Allow' }).click()])
  const created = await client.authorizationCodeGrant(config, new URL(fresh.page.url()), { pkceCodeVerifier: again.verifier, expectedState: again.state })
  t.equal(created.claims()?.sub, String((await server.store.findUserByEmail('mary@example.test'))?.id), 'the new account signs in to the app')
  t.same([...await violations(), ...await fresh.violations()], [])
})

t.test('in Chromium: the device flow (RFC 8628): code page, sign-in, consent, "you can close this page"; then the device polls its tokens', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl } = await sharedService('header')
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'TV App', public: true, redirectUris: [], grants: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'] }))
  const device = await client.initiateDeviceAuthorization(config, { scope: 'openid email' })
  t.ok(device.verification_uri.startsWith(baseUrl))

  const browser = await chromium()
  const { page, violations } = await watchedPage(browser, t)
  await page.goto(device.verification_uri)
  await page.getByLabel(/code/i).fill(device.user_code)
  await confirmDevice(page, user)
  t.same(await violations(), [], 'nothing refused under the CSP')

  const tokens = await client.pollDeviceAuthorizationGrant(config, { ...device, interval: 0 })
  t.equal(tokens.claims()?.sub, String(user.id))
})

t.test('in Chromium: a device link with the code in it: the confirmation names the app and the code, then sign-in and consent', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl } = await sharedService('header')
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'TV App', public: true, redirectUris: [], grants: ['urn:ietf:params:oauth:grant-type:device_code'] }))
  const device = await client.initiateDeviceAuthorization(config, { scope: 'openid' })

  const browser = await chromium()
  const { page, violations } = await watchedPage(browser, t)
  await page.goto(device.verification_uri_complete ?? '')
  await page.getByText(/TV App asks to sign in/).waitFor()
  t.match(await page.textContent('main'), device.user_code, 'the code is shown')
  await confirmDevice(page, user)
  t.same(await violations(), [], 'nothing refused under the CSP')
})

t.test('in Chromium: RP-initiated logout asks, signs out and returns to the app', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl, app } = await sharedService('header')
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { name: 'Signed App', redirectUris: [`${app}/callback`], postLogoutRedirectUris: [`${app}/bye`] }))
  const request = await authorizationRequest(config, 'openid email profile', { redirect_uri: `${app}/callback` })
  const browser = await chromium()
  const { page } = await watchedPage(browser, t)
  await page.goto(request.url.href)
  await page.getByLabel('Email').fill(user.email)
  await page.getByLabel('Password').fill(user.password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await Promise.all([page.waitForURL(`${app}/callback?**`), page.getByRole('button', { name: 'Allow' }).click()])
  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: request.verifier, expectedState: request.state })

  await page.goto(client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token as string, post_logout_redirect_uri: `${app}/bye` }).href)
  await Promise.all([page.waitForURL(`${app}/bye`), page.getByRole('button', { name: 'Sign out' }).click()])

  // Signed out of the provider: the next authorization asks for the password again.
  const again = await authorizationRequest(config, 'openid', { redirect_uri: `${app}/callback` })
  await page.goto(again.url.href)
  await page.getByLabel('Email').waitFor()
  t.pass('the sign-in page is shown again')
})

for (const variant of ['cookie', 'header'] as const) {
  t.test(`in Chromium: the sign-in page offers the upstream providers; signing in with one goes on to consent (${variant} variant)`, { skip: skipWithoutChromium }, async (t) => {
    const { server, baseUrl, app } = await sharedService(variant)
    const config = await relyingParty(baseUrl, await addClient(server, { name: 'Wiki', redirectUris: [`${app}/callback`] }))
    const request = await authorizationRequest(config, 'openid email', { redirect_uri: `${app}/callback` })

    const browser = await chromium()
    const { page, violations } = await watchedPage(browser, t)
    await page.goto(request.url.href)
    await page.getByRole('link', { name: 'Sign in with Corp' }).click()
    await page.fill('input[name=login]', 'hedy')
    await page.fill('input[name=password]', 'any password')
    await page.click('button[type=submit]')
    await Promise.all([page.waitForURL(`${app}/callback?**`), page.getByRole('button', { name: 'Allow' }).click()])
    const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: request.verifier, expectedState: request.state })
    t.match(await client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck), { email: 'hedy@example.test' })
    t.same(await violations(), [])
  })
}

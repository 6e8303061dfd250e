import type { FastifyInstance } from 'fastify'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import type { Variant } from '../../core/config.js'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { credentials, logIn, registerUser, type RegisteredUser } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink, type Mailbox } from '../fixtures/mailbox.js'
import { testClock } from '../fixtures/clock.js'
import { addClient, authorizationRequest, authorizeInBrowser, browse, CookieJar, oauthErrorOf, providerService, REDIRECT_URI, relyingParty } from '../fixtures/oauth.js'

/*
 * Findings 1 and 2 of the third review: the provider's browser session (oidc-provider's `_session`
 * cookie) outlived the service session that signed it in. After the user's session ended (signing out
 * everywhere, a password change or reset, an admin ending the sessions, /auth/logout), a browser that
 * kept the provider's cookies still got codes, after one consent click at most: on a shared computer
 * the next person was signed in to apps as the previous one, and a squatter who signed in to an app
 * once kept getting codes for the account after the owner's reset. Runs on the backend under test.
 */

interface SignedInBrowser {
  server: FastifyInstance
  baseUrl: string
  variant: Variant
  user: RegisteredUser
  config: client.Configuration
  /** The browser's cookies: the provider's, and in the cookie variant the service's. */
  jar: CookieJar
  /** The answer of the sign-in the page made: the header variant's refresh token is in it. */
  login: { accessToken: string, refreshToken?: string }
  mailbox: Mailbox
}

/** A browser that signed in to an app through the provider's pages: the app got its code. */
async function signedInToApp (t: Test, variant: Variant, fields: Record<string, string> = {}): Promise<SignedInBrowser> {
  const mailbox = await startMailbox(t)
  const { server, baseUrl } = await providerService(t, { variant, env: { SMTP_URL: mailbox.smtpUrl } })
  const user = await registerUser(server, variant, fields)
  const config = await relyingParty(baseUrl, await addClient(server))
  const jar = new CookieJar()
  let login: SignedInBrowser['login'] | undefined
  const callback = await authorizeInBrowser(baseUrl, jar, (await authorizationRequest(config)).url, { variant, person: user, onLogin: (answer) => { login = answer } })
  if (callback.searchParams.get('code') === null || login === undefined) throw new Error(`no code at first: ${callback.href}`)
  return { server, baseUrl, variant, user, config, jar, login, mailbox }
}

/** Only oidc-provider's session cookies: what a browser keeps when the service's own are gone (or were never its). */
function providerCookiesOf (jar: CookieJar): CookieJar {
  const kept = new CookieJar()
  for (const [name, value] of jar.cookies) if (name.startsWith('_session')) kept.cookies.set(name, value)
  return kept
}

/** A new authorization of the app in `jar`'s browser, with nobody there to sign in: the steps shown, and the URL it ended at or why it stopped. */
async function authorizeAgain (browser: SignedInBrowser, jar: CookieJar): Promise<{ steps: string[], outcome: string }> {
  const steps: string[] = []
  const { url } = await authorizationRequest(browser.config)
  const outcome = await authorizeInBrowser(browser.baseUrl, jar, url, { variant: browser.variant, onStep: (step) => steps.push(step) })
    .then((ended) => `ended at ${ended.href}`, (error: Error) => error.message)
  return { steps, outcome }
}

async function resetPassword ({ server, baseUrl, mailbox }: SignedInBrowser, email: string, newPassword: string): Promise<void> {
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email } })
  const token = tokenFromLink(await mailbox.next(email, 'Reset your password'), baseUrl, '/reset-password')
  const reset = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: newPassword } })
  if (reset.statusCode !== 204) throw new Error(`reset answered ${reset.statusCode}: ${reset.body}`)
}

/** The ways the browser's service session ends; each is done from elsewhere but /auth/logout, which is the browser's own. */
const endings: Record<string, (browser: SignedInBrowser) => Promise<void>> = {
  'signing out everywhere (from another device)': async ({ server, variant, user }) => {
    const other = await logIn(server, variant, user)
    const answer = await server.inject({ method: 'POST', url: '/auth/logout-all', ...credentials(variant, other) })
    if (answer.statusCode !== 204) throw new Error(`logout-all answered ${answer.statusCode}`)
  },
  'a password change on another device': async ({ server, variant, user }) => {
    const other = await logIn(server, variant, user)
    const answer = await server.inject({
      method: 'POST', url: '/auth/change-password', ...credentials(variant, other), payload: { current_password: user.password, new_password: 'a brand new passphrase 2026' }
    })
    if (answer.statusCode !== 204) throw new Error(`change-password answered ${answer.statusCode}: ${answer.body}`)
  },
  'a password reset': async (browser) => { await resetPassword(browser, browser.user.email, 'a brand new passphrase 2026') },
  'an admin ending the user\'s sessions': async ({ server, variant, user }) => {
    const answer = await adminRequest(server, variant, await adminSession(server, variant), 'DELETE', `/admin/users/${user.id}/sessions`)
    if (answer.statusCode !== 204) throw new Error(`admin answered ${answer.statusCode}: ${answer.body}`)
  },
  '/auth/logout of the browser\'s own session': async ({ baseUrl, variant, jar, login }) => {
    // The cookie variant's browser sends its refresh cookie; the header variant's client sends the login's refresh token.
    const answer = variant === 'cookie'
      ? await browse(jar, `${baseUrl}/auth/logout`, { method: 'POST' })
      : await fetch(`${baseUrl}/auth/logout`, { method: 'POST', headers: { 'x-refresh-token': `Bearer ${login.refreshToken ?? ''}` } })
    if (answer.status !== 204) throw new Error(`logout answered ${answer.status}`)
  }
}

for (const variant of ['cookie', 'header'] as const) {
  for (const [ending, end] of Object.entries(endings)) {
    t.test(`${variant} variant: after ${ending}, the provider's leftover session cookies get no code: the browser is asked to sign in`, async (t) => {
      const browser = await signedInToApp(t, variant)
      await end(browser)
      const { steps, outcome } = await authorizeAgain(browser, providerCookiesOf(browser.jar))
      t.notMatch(outcome, /[?&]code=/, 'no authorization code')
      t.same(steps.slice(0, 1), ['login'], 'the first step is a sign-in, not a consent click')
      t.match(outcome, /a sign-in was asked/)
    })
  }

  t.test(`${variant} variant: a squatter who signed in to an app with the owner's address gets no more codes once the owner resets the password`, async (t) => {
    const squatter = await signedInToApp(t, variant, { email: 'owner@example.test' })
    // The owner, who never saw the squatter's password, takes the address back with a reset.
    await resetPassword(squatter, 'owner@example.test', 'the owner\'s own passphrase 2026')
    // The squatter kept every cookie of its browser.
    const { steps, outcome } = await authorizeAgain(squatter, squatter.jar)
    t.notMatch(outcome, /[?&]code=/, 'no authorization code for the squatter')
    t.same(steps.slice(0, 1), ['login'], 'the squatter is asked to sign in, which only the owner\'s password does now')
  })
}

t.test('a browser whose service session is still live keeps its single sign-on (no sign-in step)', async (t) => {
  const browser = await signedInToApp(t, 'header')
  const { steps, outcome } = await authorizeAgain(browser, providerCookiesOf(browser.jar))
  t.same(steps, [], 'no step at all: the app was allowed before')
  t.match(outcome, /[?&]code=/)
})

t.test('an app\'s refresh token ended by signing out everywhere stays refused once the revocation has left the revocation log\'s window', async (t) => {
  const clock = testClock()
  const { server, baseUrl } = await providerService(t, { clock })
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server, { grants: ['authorization_code', 'refresh_token'] }))
  const request = await authorizationRequest(config, 'openid offline_access', { redirect_uri: REDIRECT_URI, prompt: 'consent' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  const other = await logIn(server, 'header', user)
  t.equal((await server.inject({ method: 'POST', url: '/auth/logout-all', ...credentials('header', other) })).statusCode, 204)
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant', 'refused at once')

  // The revocation set keeps a revocation for ACCESS_TOKEN_TTL (15 minutes) and 5 s: then it reads "live" for every session it does not hold.
  clock.advance(16 * 60_000)
  await server.revocations.catchUp()
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant', 'and still refused 16 minutes later')
})

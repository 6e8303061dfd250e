import * as client from 'openid-client'
import t from 'tap'
import { SoftwareCredential } from '../fixtures/authenticator.js'
import { credentials, loggedInUser, type Session } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, oauthErrorOf, REDIRECT_URI, relyingParty } from '../fixtures/oauth.js'
import { fragmentOf, providerSignIn, serviceWithProvider, type ProviderService } from '../fixtures/provider-service.js'

/*
 * Finding 7 of the third review: a provider sign-in merged into a squatter's password. The squatter
 * registers the owner's address with a password; the owner follows the verification mail (the link
 * keeps the registrant's password); the owner's later provider sign-in landed in that account, and the
 * squatter's password and sessions still opened it. The person signing in with the provider never
 * showed that password: the link clears it and ends every session (apps' grants with them).
 */

const ADDRESS = 'owner@example.test'

async function accountStatus (service: ProviderService, session: Pick<Session, 'accessToken' | 'refreshToken'>) {
  return (await service.server.inject({ method: 'GET', url: '/auth/account', ...credentials(service.variant, session) })).statusCode
}

async function refreshStatus (service: ProviderService, session: Pick<Session, 'accessToken' | 'refreshToken'>) {
  return (await service.server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(service.variant, session) })).statusCode
}

async function passwordLogin (service: ProviderService, password: string) {
  return (await service.server.inject({ method: 'POST', url: '/auth/login', payload: { email: ADDRESS, password } })).statusCode
}

for (const variant of ['cookie', 'header'] as const) {
  t.test(`${variant} variant: after the owner's provider sign-in, the squatter's password and sessions no longer open the verified account`, async (t) => {
    const mailbox = await startMailbox(t)
    const service = await serviceWithProvider(t, variant, { SMTP_URL: mailbox.smtpUrl })
    const squatter = await loggedInUser(service.server, variant, { email: ADDRESS })
    // The owner follows the verification mail the squatter's registration sent: the address is verified, the password kept.
    const link = tokenFromLink(await mailbox.next(ADDRESS, 'Verify your email address'), service.baseUrl, '/verify-email')
    t.equal((await service.server.inject({ method: 'POST', url: '/auth/verify-email', payload: { token: link } })).statusCode, 204)
    t.equal(await accountStatus(service, squatter), 200, 'before: the squatter\'s session is live')
    // After the verification, the squatter adds a passkey: another way in the owner never showed.
    const passkey = new SoftwareCredential(service.baseUrl)
    const offered = await service.server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', ...credentials(variant, squatter) })
    const added = await service.server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, squatter), payload: passkey.register(offered.json()) })
    t.equal(added.statusCode, 201, 'the squatter has a passkey')
    // And signs in to an app (the service's OAuth provider), which keeps a refresh token.
    const app = await addClient(service.server, { grants: ['authorization_code', 'refresh_token'] })
    const config = await relyingParty(service.baseUrl, app)
    const request = await authorizationRequest(config, 'openid email offline_access', { redirect_uri: REDIRECT_URI, prompt: 'consent' })
    const appCallback = await authorizeInBrowser(service.baseUrl, new CookieJar(), request.url, { variant, person: squatter.user })
    const appTokens = await client.authorizationCodeGrant(config, appCallback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
    t.ok(appTokens.refresh_token, 'the squatter\'s app holds a refresh token')

    service.provider.accounts.set('owner', { email: ADDRESS, email_verified: true, given_name: 'Real', family_name: 'Owner' })
    const { callback, verifier } = await providerSignIn(service, 'owner')
    if (variant === 'header') {
      t.equal(callback.status, 303)
      const exchanged = await service.server.inject({ method: 'POST', url: '/auth/oidc/exchange', payload: { code: fragmentOf(callback).get('code') ?? '', code_verifier: verifier } })
      t.equal(exchanged.statusCode, 200, 'the owner is signed in')
      t.equal(exchanged.json().user.id, squatter.user.id, 'to the account that holds the address')
    } else {
      t.equal(callback.status, 200, 'the owner is signed in')
    }

    t.equal(await passwordLogin(service, squatter.user.password), 401, 'the squatter\'s password no longer signs in')
    t.equal(await accountStatus(service, squatter), 401, 'the squatter\'s session has ended')
    t.equal(await refreshStatus(service, squatter), 401, 'and its refresh token is refused')
    const options = (await service.server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
    t.equal((await service.server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: passkey.assert(options) })).statusCode, 401, 'nor its passkey')
    t.equal(await oauthErrorOf(client.refreshTokenGrant(config, appTokens.refresh_token as string)), 'invalid_grant', 'the app\'s grant has ended')
    const events = await service.server.store.listSecurityEvents(squatter.user.id, { limit: 20 })
    t.ok(events.some(event => event.type === 'identity_linked' && event.detail?.password_cleared === true), 'the clearing is recorded')

    // The owner signs in with the provider again: the same account, no longer touched.
    const again = await providerSignIn(service, 'owner')
    t.equal(again.callback.status, variant === 'header' ? 303 : 200, 'a later provider sign-in lands as before')
    t.equal(fragmentOf(again.callback).get('error'), null)
  })
}

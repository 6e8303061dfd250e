import { randomBytes } from 'node:crypto'
import type * as OpenIdClient from 'openid-client'
import type { AccountStore } from '../../db/store.js'
import type { Clock } from '../clock.js'
import type { OidcProviderConfig } from '../config.js'
import { InvalidOidcStateError, ProviderNotFoundError } from '../errors.js'
import { openPending, sealPending, STATE_TTL_SECONDS, type PendingSignIn } from './state-cookie.js'
import type { Logger } from '../logger.js'
import { createSealer } from '../secrets/sealing.js'

/** What the service reads of the provider's account, from the validated ID token and, for what it lacks, userinfo. */
export interface ProviderClaims {
  subject: string
  email?: string
  emailVerified: boolean
  givenName?: string
  familyName?: string
  name?: string
  preferredUsername?: string
}

export interface Oidc {
  /** The providers that were discovered at start, for the sign-in buttons. */
  providers (): Array<{ name: string, label: string }>
  /** 404 PROVIDER_NOT_FOUND unless the provider serves. */
  assertServed (provider: string): void
  /**
   * Starts an authorization code flow with PKCE (S256), state and nonce: the provider's authorization
   * URL, and the sealed cookie that binds those checks (and `redirectTo`, and the app's `codeChallenge` in
   * the header variant) to this browser.
   */
  begin (provider: string, redirectUri: string, redirectTo: string, codeChallenge?: string): Promise<{ authorizationUrl: URL, cookie: string }>
  /** The pending sign-in of the cookie, if it opens, is live and its state is `state`; else 400 INVALID_STATE. */
  pending (provider: string, cookie: string | undefined, state: string | undefined): PendingSignIn
  /**
   * Exchanges the code of `callbackUrl` and validates the ID token (signature, issuer, audience,
   * nonce, expiry): the claims. Throws (openid-client's errors) when the provider's answer fails a check.
   */
  complete (provider: string, callbackUrl: URL, pending: PendingSignIn): Promise<ProviderClaims>
}

export interface OidcDependencies {
  store: Pick<AccountStore, 'readSetting' | 'writeSetting'>
  clock: Clock
  log: Logger
}

export interface OidcOptions {
  providers: OidcProviderConfig[]
  discoveryTimeoutSeconds: number
}

/** The store setting that holds the key sealing the state cookies (shared by every instance: any may take the callback). */
const STATE_KEY_SETTING = 'oidc_state_key'

const optionalString = (value: unknown) => typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined

/**
 * Sign-in with OpenID Connect providers (openid-client, OpenID Certified). Each provider's
 * discovery document is read at start, within OIDC_DISCOVERY_TIMEOUT: one that fails is logged
 * and left out, and the others serve. http:// issuers (refused in production by the config) are
 * allowed for development and tests.
 */
export async function createOidc ({ store, clock, log }: OidcDependencies, { providers, discoveryTimeoutSeconds }: OidcOptions): Promise<Oidc> {
  // Each served provider with the library that serves it: openid-client is loaded only when a
  // provider is configured.
  const configurations = new Map<string, { label: string, scopes: string, configuration: OpenIdClient.Configuration, client: typeof OpenIdClient }>()

  if (providers.length > 0) {
    const client = await import('openid-client')
    await Promise.all(providers.map(async (provider) => {
      const insecure = provider.issuer.startsWith('http://')
      try {
        const configuration = await client.discovery(new URL(provider.issuer), provider.clientId, provider.clientSecret, undefined, {
          timeout: discoveryTimeoutSeconds,
          execute: insecure ? [client.allowInsecureRequests] : []
        })
        configurations.set(provider.name, { label: provider.label, scopes: provider.scopes, configuration, client })
      } catch (error) {
        log.error({ err: error, provider: provider.name, issuer: provider.issuer }, 'OpenID provider not discovered at start: its sign-in is left out')
      }
    }))
  }
  if (configurations.size > 0) log.info({ providers: [...configurations.keys()] }, 'sign-in with OpenID providers ready')

  let sealingKey: Buffer | undefined
  if (providers.length > 0) {
    await store.writeSetting(STATE_KEY_SETTING, randomBytes(32).toString('base64'), { onlyIfNone: true })
    sealingKey = Buffer.from(await store.readSetting(STATE_KEY_SETTING) ?? '', 'base64')
  }
  const sealer = () => {
    if (sealingKey === undefined) throw new ProviderNotFoundError()
    return createSealer(sealingKey)
  }
  const served = (provider: string) => {
    const found = configurations.get(provider)
    if (found === undefined) throw new ProviderNotFoundError()
    return found
  }

  return {
    providers: () => [...configurations].map(([name, { label }]) => ({ name, label })),

    assertServed (provider) { served(provider) },

    async begin (provider, redirectUri, redirectTo, codeChallenge) {
      const { configuration, scopes, client } = served(provider)
      const pending: PendingSignIn = {
        state: client.randomState(),
        nonce: client.randomNonce(),
        codeVerifier: client.randomPKCECodeVerifier(),
        redirectTo,
        ...(codeChallenge === undefined ? {} : { codeChallenge }),
        expiresAt: clock.now() + STATE_TTL_SECONDS * 1000
      }
      const authorizationUrl = client.buildAuthorizationUrl(configuration, {
        redirect_uri: redirectUri,
        scope: scopes,
        state: pending.state,
        nonce: pending.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(pending.codeVerifier),
        code_challenge_method: 'S256'
      })
      return { authorizationUrl, cookie: sealPending(sealer(), provider, pending) }
    },

    pending (provider, cookie, state) {
      served(provider)
      const pending = openPending(sealer(), provider, cookie, clock.now())
      if (pending === undefined || state === undefined || state !== pending.state) throw new InvalidOidcStateError()
      return pending
    },

    async complete (provider, callbackUrl, pending) {
      const { configuration, client } = served(provider)
      const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: pending.codeVerifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true
      })
      const idToken = tokens.claims()
      if (idToken === undefined) throw new Error('no ID token')
      let claims: Record<string, unknown> = idToken
      // Many providers put only `sub` in the ID token and the profile at userinfo.
      if (optionalString(idToken.email) === undefined) {
        claims = { ...await client.fetchUserInfo(configuration, tokens.access_token, idToken.sub), ...idToken }
      }
      const email = optionalString(claims.email)?.toLowerCase()
      return {
        subject: idToken.sub,
        email,
        // Some providers send "true" as a string.
        emailVerified: email !== undefined && (claims.email_verified === true || claims.email_verified === 'true'),
        givenName: optionalString(claims.given_name),
        familyName: optionalString(claims.family_name),
        name: optionalString(claims.name),
        preferredUsername: optionalString(claims.preferred_username)
      }
    }
  }
}

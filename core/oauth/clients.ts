import { randomBytes, timingSafeEqual } from 'node:crypto'
import { hashToken, newRandomToken } from '../tokens/random-token.js'

/** The grants an app may register; authorization_code (with PKCE S256) is the default for every client. */
export const CLIENT_GRANTS = ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'] as const
export type ClientGrant = typeof CLIENT_GRANTS[number]

/** What an operator gives `account-service clients add`. */
export interface NewClient {
  name: string
  redirectUris: string[]
  postLogoutRedirectUris?: string[]
  /** OpenID Back-Channel Logout 1.0: where the app is told, by a signed logout token, that a user signed out. */
  backchannelLogoutUri?: string
  /** A public client (a SPA, a mobile app, a CLI) has no secret: PKCE alone binds its codes. */
  public: boolean
  /** First-party: no consent page. */
  trusted: boolean
  /** Default: authorization_code and refresh_token. */
  grants?: ClientGrant[]
  /** `optional` lets a confidential client leave PKCE out (one that cannot send it); a public client always needs it. Default `required`. */
  pkce?: ClientPkce
}

export const CLIENT_PKCE = ['required', 'optional'] as const
export type ClientPkce = typeof CLIENT_PKCE[number]

/** The stored metadata of a client (oidc-provider's names), with the secret's hash in place of the secret. */
export type ClientMetadata = Record<string, unknown> & { client_id: string, client_name: string }

/**
 * The prefix that marks a stored client_secret as a hash: the store never holds a secret an app
 * could use (core/oauth/adapter.ts hashes one dynamic registration made before it is written).
 */
export const HASHED_SECRET_PREFIX = 'sha256:'

export function hashClientSecret (secret: string): string {
  return secret.startsWith(HASHED_SECRET_PREFIX) ? secret : `${HASHED_SECRET_PREFIX}${hashToken(secret)}`
}

/** Whether `presented` is the secret whose hash is `stored`, in constant time. */
export function clientSecretMatches (stored: string, presented: string): boolean {
  const expected = Buffer.from(hashClientSecret(stored))
  const actual = Buffer.from(hashClientSecret(presented.startsWith(HASHED_SECRET_PREFIX) ? `x${presented}` : presented))
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}

/**
 * A new client's metadata (as stored) and its secret (shown once, never stored). The response types
 * follow the grants: `code` when it may use the authorization endpoint, none for a machine client.
 */
export function newClient (client: NewClient): { metadata: ClientMetadata, secret?: string } {
  const grants = client.grants ?? ['authorization_code', 'refresh_token']
  const secret = client.public ? undefined : newRandomToken()
  const metadata: ClientMetadata = {
    // Hex: an id never starts with "-", which a command line would read as an option.
    client_id: randomBytes(16).toString('hex'),
    client_name: client.name,
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris ?? [],
    ...(client.backchannelLogoutUri === undefined ? {} : { backchannel_logout_uri: client.backchannelLogoutUri }),
    grant_types: grants,
    response_types: grants.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: client.public ? 'none' : 'client_secret_basic',
    trusted: client.trusted,
    pkce: client.public ? 'required' : client.pkce ?? 'required',
    ...(secret === undefined ? {} : { client_secret: hashClientSecret(secret) })
  }
  return { metadata, secret }
}

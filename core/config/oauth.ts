import { Type, type Static } from '@sinclair/typebox'
import { parseDurationSeconds } from '../duration.js'
import type { NodeEnv } from './server.js'
import { ConfigError, Duration } from './setting.js'

// OAuth both ways: the provider's dynamic client registration (for other apps), and sign-in with
// OpenID Connect providers (OIDC_PROVIDERS).

export const OauthSettings = Type.Object({
  // RFC 7591 dynamic client registration, only with this initial access token; unset: none.
  OAUTH_REGISTRATION_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  OAUTH_TOKEN_FAST_PATH: Type.Boolean({ default: true }),
  // Sign-in with OpenID Connect providers: comma-separated names; each reads OIDC_<NAME>_ISSUER, _CLIENT_ID, ... (see parseOidcProviders).
  OIDC_PROVIDERS: Type.String({ default: '' }),
  OIDC_DISCOVERY_TIMEOUT: Duration('5s')
})

export interface OauthConfig {
  /** OAUTH_REGISTRATION_TOKEN: the initial access token of dynamic client registration (RFC 7591); unset, none. */
  oauthRegistrationToken?: string
  /**
   * OAUTH_TOKEN_FAST_PATH: the token endpoint's client-credentials grant and authorization_code exchange answered by the
   * service in their common case (core/oauth/client-credentials-grant.ts, authorization-code-grant.ts); false,
   * oidc-provider answers every token request.
   */
  oauthTokenFastPath: boolean
  oidc: {
    providers: OidcProviderConfig[]
    /** How long the start waits for one provider's discovery document before leaving the provider out. */
    discoveryTimeoutSeconds: number
  }
}

/** One OpenID Connect provider people may sign in with (OIDC_PROVIDERS). */
export interface OidcProviderConfig {
  /** Lower-case, as in the callback path /auth/oidc/<name>/callback. */
  name: string
  /** What the sign-in button says: "Sign in with <label>". */
  label: string
  issuer: string
  clientId: string
  clientSecret: string
  scopes: string
}

/** `environment` is the whole environment: each provider's settings are named after it, outside the fixed schema. */
export function oauthConfig (env: Static<typeof OauthSettings> & { NODE_ENV: NodeEnv }, environment: Record<string, string | undefined>): OauthConfig {
  const providers = parseOidcProviders(env.OIDC_PROVIDERS, environment, env.NODE_ENV)
  const discoveryTimeoutSeconds = parseDurationSeconds(env.OIDC_DISCOVERY_TIMEOUT)
  if (discoveryTimeoutSeconds < 1) throw new ConfigError('Invalid setting: OIDC_DISCOVERY_TIMEOUT must be at least 1 second')
  return { oauthRegistrationToken: env.OAUTH_REGISTRATION_TOKEN, oauthTokenFastPath: env.OAUTH_TOKEN_FAST_PATH, oidc: { providers, discoveryTimeoutSeconds } }
}

const PROVIDER_NAME = /^[a-z][a-z0-9_]{0,31}$/

/**
 * OIDC_PROVIDERS=google,corp and, for each name, OIDC_<NAME>_ISSUER, _CLIENT_ID, _CLIENT_SECRET
 * (required), _SCOPES (default "openid email profile") and _LABEL (default the name). The names
 * per provider are not in the fixed schema, so they are read here from the same environment.
 * An http:// issuer is refused in production (tokens and the client secret would travel in clear).
 */
function parseOidcProviders (list: string, environment: Record<string, string | undefined>, nodeEnv: NodeEnv): OidcProviderConfig[] {
  const names = list.split(',').map(name => name.trim().toLowerCase()).filter(name => name !== '')
  const seen = new Set<string>()
  return names.map(name => {
    if (!PROVIDER_NAME.test(name)) throw new ConfigError(`Invalid setting: OIDC_PROVIDERS has "${name}"; a name is a letter then up to 31 letters, digits or _`)
    // The routes beside /auth/oidc/:provider.
    if (name === 'providers' || name === 'exchange') throw new ConfigError(`Invalid setting: OIDC_PROVIDERS cannot name a provider "${name}" (a route of its own)`)
    if (seen.has(name)) throw new ConfigError(`Invalid setting: OIDC_PROVIDERS names "${name}" twice`)
    seen.add(name)
    const prefix = `OIDC_${name.toUpperCase()}_`
    const read = (key: string) => {
      const value = environment[prefix + key]?.trim()
      return value === undefined || value === '' ? undefined : value
    }
    const required = (key: string) => {
      const value = read(key)
      if (value === undefined) throw new ConfigError(`Invalid setting: ${prefix}${key} is required (provider "${name}" is in OIDC_PROVIDERS)`)
      return value
    }
    const issuer = required('ISSUER')
    if (!/^https?:\/\/[^/]/.test(issuer) || !URL.canParse(issuer)) throw new ConfigError(`Invalid setting: ${prefix}ISSUER must be an https:// URL`)
    if (nodeEnv === 'production' && !issuer.startsWith('https://')) throw new ConfigError(`Invalid setting: ${prefix}ISSUER must start with https:// in production`)
    const scopes = read('SCOPES') ?? 'openid email profile'
    if (!scopes.split(/\s+/).includes('openid')) throw new ConfigError(`Invalid setting: ${prefix}SCOPES must include openid`)
    return { name, label: read('LABEL') ?? name, issuer, clientId: required('CLIENT_ID'), clientSecret: required('CLIENT_SECRET'), scopes }
  })
}

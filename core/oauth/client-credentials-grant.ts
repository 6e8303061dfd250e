import { parse as parseForm } from 'node:querystring'
import type { IncomingHttpHeaders } from 'node:http'
import type Provider from 'oidc-provider'
import type { ResourceServer } from 'oidc-provider'

/*
 * The token endpoint's client-credentials grant in its common case, served without oidc-provider's Koa stack
 * (issue 34: its per-request middleware was half of a grant). The token is still oidc-provider's: its client
 * (Client.find, the secret compared by the service's constant-time compareClientSecret), its ClientCredentials
 * model and ResourceServer, and its save(), which signs the JWT and calls extraTokenClaims (the status entry,
 * core/oauth/client-token-status.ts) and emits `client_credentials.issued`, as its grant handler does. So the
 * header, the claims and the answer are those of oidc-provider's path, which this module mirrors step by step
 * (oidc-provider lib/actions/token.js, lib/shared/client_auth.js, lib/actions/grants/client_credentials.js).
 *
 * Only a request that succeeds there is served here. Anything else is undefined, and the caller hands the
 * request to oidc-provider unchanged, which answers it (its errors, their WWW-Authenticate, its events):
 * another grant or parameter, a DPoP proof, a client attestation, a browser's request (Origin: its CORS),
 * another way of client authentication, a client unknown or not allowed the grant, a wrong or expired
 * secret, a scope of the service's users (openid, …) or one the resource does not grant, an unknown resource.
 */

/** The form parameters served here; any other sends the request to oidc-provider. */
const SERVED_PARAMETERS = new Set(['grant_type', 'scope', 'resource', 'client_id', 'client_secret'])

/** The headers oidc-provider reads on this path beyond the credentials (DPoP, client attestation, CORS): present, it answers. */
const PROVIDER_HEADERS = ['dpop', 'oauth-client-attestation', 'oauth-client-attestation-pop', 'origin'] as const

/** The form type oidc-provider reads (selective_body.js), in UTF-8. */
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;\s*charset="?utf-8"?\s*)?$/i

/** The registered client authentications that take a secret by either way (oidc-provider's client_auth.js lets both in). */
const SECRET_METHODS = new Set(['client_secret_basic', 'client_secret_post'])

/** RFC 6749 §3.3's scope syntax, oidc-provider's isValidScope. */
const SCOPE_SYNTAX = /^[\x21\x23-\x5B\x5D-\x7E]+(?: [\x21\x23-\x5B\x5D-\x7E]+)*$/u

/** oidc-provider's check of a Basic credential's decoded parts (consts/client_attributes.js noVSCHAR). */
const NOT_VSCHAR = /[^\x20-\x7E]/

/** Base64 as oidc-provider's client_auth.js isValidBase64 takes it. */
function isValidBase64 (input: string): boolean {
  const match = /^([A-Za-z0-9+/]*)(={0,2})$/u.exec(input)
  if (match?.[1] === undefined || match[1] === '') return false
  const remainder = match[1].length % 4
  if (match[2] === '') return remainder !== 1
  return (match[1].length + match[2].length) % 4 === 0 && match[2].length === 4 - remainder
}

/** One part of an HTTP Basic credential, form-decoded (RFC 6749 §2.3.1); undefined where oidc-provider refuses it. */
function decodeBasicPart (part: string): string | undefined {
  try {
    const decoded = decodeURIComponent(part.replace(/\+/g, '%20'))
    return NOT_VSCHAR.test(decoded) ? undefined : decoded
  } catch {
    return undefined
  }
}

/** The client's id and secret, sent one way only (HTTP Basic, or the form's client_secret); undefined for anything else. */
function credentialsOf (authorization: string | undefined, clientId: string | undefined, clientSecret: string | undefined): { clientId: string, secret: string } | undefined {
  if (authorization === undefined) {
    return clientId === undefined || clientSecret === undefined ? undefined : { clientId, secret: clientSecret }
  }
  if (clientSecret !== undefined) return undefined
  const parts = authorization.split(' ')
  if (parts.length !== 2 || parts[0].toLowerCase() !== 'basic' || !isValidBase64(parts[1])) return undefined
  const basic = Buffer.from(parts[1], 'base64').toString('utf8')
  const colon = basic.indexOf(':')
  if (colon === -1) return undefined
  const basicId = decodeBasicPart(basic.slice(0, colon))
  const secret = decodeBasicPart(basic.slice(colon + 1))
  if (basicId === undefined || secret === undefined || secret === '' || basicId === '') return undefined
  return clientId === undefined || clientId === basicId ? { clientId: basicId, secret } : undefined
}

/** The form's parameters when all are served here and none is repeated; an empty one is absent, as oidc-provider's Params reads it. */
function servedParameters (form: Buffer): Map<string, string> | undefined {
  const parameters = new Map<string, string>()
  for (const [name, value] of Object.entries(parseForm(form.toString()))) {
    if (!SERVED_PARAMETERS.has(name) || typeof value !== 'string') return undefined
    if (value !== '') parameters.set(name, value)
  }
  return parameters
}

/**
 * The headers of oidc-provider's answer beside its JSON: no-store (its noCache), and what its CORS middleware of the
 * token endpoint sets for a request without Origin (lib/shared/cors.js: any origin, the DPoP nonce and WWW-Authenticate readable).
 */
export const TOKEN_ANSWER_HEADERS = {
  'cache-control': 'no-store',
  vary: 'Origin',
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'DPoP-Nonce,WWW-Authenticate'
} as const

export interface TokenRequest {
  /** The form as read (the route's parser: application/x-www-form-urlencoded, TOKEN_BODY_LIMIT). */
  form: Buffer
  headers: IncomingHttpHeaders
}

/** The token endpoint's answer to a client-credentials grant, its members in oidc-provider's order (buildTokenResponse). */
export interface ClientCredentialsAnswer {
  access_token: string
  expires_in: number
  scope?: string
  token_type: string
}

export interface ClientCredentialsGrantOptions {
  /** The issuer: the service's own resource, the default one (resourceIndicators.defaultResource). */
  issuer: string
  /** The scopes oidc-provider knows (its `scopes` setting): the users' scopes, which this grant never serves. */
  userScopes: readonly string[]
  /** The ResourceServer info of a resource (resourceIndicators.getResourceServerInfo) for a request that asks for no user scope; undefined: invalid_target. */
  resourceServerInfo (resource: string): Promise<ResourceServer | undefined>
}

/** The grant's common case against `provider`: the answer, or undefined for oidc-provider to answer the request. */
export type ClientCredentialsGrant = (request: TokenRequest) => Promise<ClientCredentialsAnswer | undefined>

export function clientCredentialsGrant (provider: Provider, { issuer, userScopes, resourceServerInfo }: ClientCredentialsGrantOptions): ClientCredentialsGrant {
  const statics = new Set(userScopes)

  return async function serve ({ form, headers }) {
    if (!FORM_TYPE.test(headers['content-type'] ?? '') || PROVIDER_HEADERS.some(name => headers[name] !== undefined)) return undefined
    const parameters = servedParameters(form)
    if (parameters?.get('grant_type') !== 'client_credentials') return undefined
    const credentials = credentialsOf(headers.authorization, parameters.get('client_id'), parameters.get('client_secret'))
    if (credentials === undefined) return undefined

    const scope = parameters.get('scope')
    const requested = scope === undefined ? [] : [...new Set(scope.split(' '))]
    if (scope !== undefined && (!SCOPE_SYNTAX.test(scope) || requested.some(name => statics.has(name)))) return undefined
    // No resource is the issuer's (defaultResource), which grants this grant no scope: a scope asked for there is invalid_scope.
    const resource = parameters.get('resource') ?? issuer
    if (resource === issuer && scope !== undefined) return undefined

    const client = await provider.Client.find(credentials.clientId)
    if (client === undefined || !SECRET_METHODS.has(String(client.clientAuthMethod))) return undefined
    // A secret with an expiry is left to oidc-provider's check of it (checkClientSecretExpiration).
    if (!client.grantTypeAllowed('client_credentials') || (client.clientSecretExpiresAt ?? 0) !== 0) return undefined
    if (!await client.compareClientSecret(credentials.secret)) return undefined

    // A registered API's URI is an absolute URI without a fragment (core/oauth/resource-servers.ts), as oidc-provider checks.
    const info = await resourceServerInfo(resource)
    if (info === undefined) return undefined
    const resourceServer = new provider.ResourceServer(resource, info)
    const granted = requested.filter(name => resourceServer.scopes.has(name)).join(' ') || undefined
    // None of the scopes asked for granted: invalid_scope (core/oauth/endpoint-answers.ts).
    if (scope !== undefined && granted === undefined) return undefined

    const token = new provider.ClientCredentials({ client, scope: requested.join(' ') || undefined })
    token.resourceServer = resourceServer
    token.scope = granted
    const accessToken = await token.save()
    return {
      access_token: accessToken,
      expires_in: token.expiration,
      ...(token.scope === undefined ? {} : { scope: token.scope }),
      token_type: token.tokenType
    }
  }
}

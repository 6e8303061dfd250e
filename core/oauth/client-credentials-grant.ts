import type Provider from 'oidc-provider'
import type { ResourceServer } from 'oidc-provider'
import { authenticatedClient, credentialsOf, onlyServed, type TokenGrant } from './token-requests.js'

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

/** RFC 6749 §3.3's scope syntax, oidc-provider's isValidScope. */
const SCOPE_SYNTAX = /^[\x21\x23-\x5B\x5D-\x7E]+(?: [\x21\x23-\x5B\x5D-\x7E]+)*$/u

export interface ClientCredentialsGrantOptions {
  /** The issuer: the service's own resource, the default one (resourceIndicators.defaultResource). */
  issuer: string
  /** The scopes oidc-provider knows (its `scopes` setting): the users' scopes, which this grant never serves. */
  userScopes: readonly string[]
  /** The ResourceServer info of a resource (resourceIndicators.getResourceServerInfo) for a request that asks for no user scope; undefined: invalid_target. */
  resourceServerInfo (resource: string): Promise<ResourceServer | undefined>
}

/** The grant's common case against `provider` (a form whose grant_type is client_credentials): the answer, or undefined for oidc-provider to answer it. */
export function clientCredentialsGrant (provider: Provider, { issuer, userScopes, resourceServerInfo }: ClientCredentialsGrantOptions): TokenGrant {
  const statics = new Set(userScopes)

  return async function serve (form) {
    const { parameters } = form
    if (!onlyServed(parameters, SERVED_PARAMETERS)) return undefined
    const credentials = credentialsOf(form)
    if (credentials?.secret === undefined) return undefined

    const scope = parameters.get('scope')
    const requested = scope === undefined ? [] : [...new Set(scope.split(' '))]
    if (scope !== undefined && (!SCOPE_SYNTAX.test(scope) || requested.some(name => statics.has(name)))) return undefined
    // No resource is the issuer's (defaultResource), which grants this grant no scope: a scope asked for there is invalid_scope.
    const resource = parameters.get('resource') ?? issuer
    if (resource === issuer && scope !== undefined) return undefined

    const client = await authenticatedClient(provider, credentials)
    if (client?.grantTypeAllowed('client_credentials') !== true) return undefined

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
    const body: Record<string, unknown> = { access_token: accessToken, expires_in: token.expiration }
    if (token.scope !== undefined) body.scope = token.scope
    body.token_type = token.tokenType
    return { statusCode: 200, body }
  }
}

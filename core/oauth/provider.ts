import type { IncomingMessage, ServerResponse } from 'node:http'
import type Provider from 'oidc-provider'
import type { Account, Configuration, KoaContextWithOIDC, ResourceServer } from 'oidc-provider'
import type { AccountStore, UserRecord } from '../../db/store.js'
import type { Clock } from '../clock.js'
import type { Variant } from '../config.js'
import type { Logger } from '../logger.js'
import type { StatusLists } from '../revocations/status-lists.js'
import type { AccessTokens } from '../tokens/access-tokens.js'
import { ID_TOKEN_TTL_SECONDS, type ProviderKeys } from '../tokens/key-ring.js'
import type { UserCache } from '../users/user-cache.js'
import { createAdapterClass } from './adapter.js'
import { createTokenClaims, GrantEndedError } from './token-claims.js'
import { pinToPublicUrl } from './public-url.js'
import { providerKeystore } from './provider-keys.js'
import { discoveryForAnyOrigin } from './public-documents.js'
import { clientSecretMatches } from './clients.js'
import { dpopNonceSecret } from './cookie-keys.js'
import type { BackchannelLogout } from './backchannel-logout.js'
import type { ClientTokenStatus } from './client-token-status.js'
import type { GrantSessions } from './grant-sessions.js'
import type { ProviderSessions } from './provider-sessions.js'
import { createResourceServers } from './resource-servers.js'
import { appTokenChecks, structuredTokens, type AppTokenChecks } from './structured-tokens.js'
import { ORGANIZATIONS_SCOPE, claimsOf, organizationsClaim, userClaims, userIdOf } from './user-claims.js'
import { providerInteractionPolicy } from './interaction-policy.js'
import { answerUnknownPaths, tieSessions } from './provider-middleware.js'
import { deviceCodePage, deviceConfirmPage, deviceLinkCsp, deviceSuccessPage, errorPage, formPostCsp, loggedOutPage, logoutPage } from './provider-pages.js'
import { answerAsTheRfcsSay, revocationAllowed } from './endpoint-answers.js'
import { EXTERNAL_SIGNING } from './signing-key.js'
import { clientCredentialsGrant } from './client-credentials-grant.js'
import { authorizationCodeGrant } from './authorization-code-grant.js'
import { tokenFormOf, type TokenAnswer, type TokenGrant, type TokenRequest } from './token-requests.js'

/** Where the provider's endpoints live (discovery names them; clients read them from there). */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  userinfo: '/oauth/userinfo',
  jwks: '/.well-known/jwks.json',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  introspection: '/oauth/introspect',
  end_session: '/oauth/logout',
  device_authorization: '/oauth/device/auth',
  code_verification: '/oauth/device',
  pushed_authorization_request: '/oauth/par',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge'
} as const

/** The interactions (sign-in, consent) are the service's page at this path, under the pages' CSP (routes/oauth/). */
export const interactionPath = (uid: string) => `/oauth/interaction/${uid}`

export const SCOPES = ['openid', 'email', 'profile', 'offline_access', 'organizations'] as const

export interface OAuthProviderOptions {
  /** PUBLIC_URL: the issuer, exactly. */
  issuer: string
  variant: Variant
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  /** How long a grant (a consent) lasts without being given again: SESSION_MAX_AGE. */
  grantTtlSeconds: number
  /** OAUTH_REGISTRATION_TOKEN: dynamic client registration only with it; unset, none. */
  registrationToken?: string
  /** Koa's proxy trust: behind TRUST_PROXY the provider reads the client's address and protocol from the proxy's headers. */
  trustProxy: boolean
}

export interface OAuthProviderDependencies {
  store: AccountStore
  accessTokens: Pick<AccessTokens, 'providerKeys' | 'jwks' | 'appTokenVerifier'>
  statusLists: Pick<StatusLists, 'claim'>
  grantSessions: GrantSessions
  /** Ties the provider's browser sessions to the service sessions that signed them in (core/oauth/provider-sessions.ts). */
  providerSessions: ProviderSessions
  /** The status entries of client-credentials tokens (core/oauth/client-token-status.ts). */
  clientTokens: ClientTokenStatus
  clock: Clock
  log: Logger
  /** The keys that sign the provider's cookies, shared by every instance (core/oauth/cookie-keys.ts). */
  cookieKeys (): Promise<string[]>
  /** Delivers back-channel logout tokens (core/oauth/backchannel-logout.ts); installed in each provider built. */
  backchannelLogout: Pick<BackchannelLogout, 'install'>
  /** The users kept in memory (core/users/user-cache.ts): userinfo reads them as GET /users/:id does. */
  users: Pick<UserCache, 'findWithEmailVerified' | 'peekWithEmailVerified'>
}

export interface OAuthProvider {
  /** The provider of the current signing keys (one is built again when they change); throws while the store cannot give its cookie key. */
  current (): Promise<Provider>
  /**
   * Whether the provider can make a URL of the request's host, read as Koa reads it (ctx.host): the first
   * X-Forwarded-Host where proxies are trusted, else Host. One no URL can hold ("a b", "[::1") would fail
   * inside the provider as its own error (500); it is the client's, to refuse before handle().
   */
  acceptsHost (req: IncomingMessage): boolean
  /** Handles a request to one of the provider's endpoints (Node's request and response), after current() has resolved. */
  handle (req: IncomingMessage, res: ServerResponse): void
  /**
   * The token endpoint's client-credentials and authorization_code grants in their common case, answered without
   * the provider's middleware (core/oauth/client-credentials-grant.ts, authorization-code-grant.ts); undefined for
   * any request the provider must answer (handle).
   */
  tokenFastPath (request: TokenRequest): Promise<TokenAnswer | undefined>
  /** Ends a grant: its session (the status bit), refresh tokens and codes. */
  revokeGrant (grantId: string): Promise<void>
  /** Whether an app's access token holds and what userinfo answers for it (routes/oauth serves userinfo's common case with it). */
  appTokens: AppTokenChecks
}

/**
 * The scopes of the service's resource a token may carry: the user's (SCOPES), except in a client-credentials
 * token, which no user stands behind (its `sub` is the client id): asking for one there is invalid_scope.
 */
function userScopesFor (ctx: KoaContextWithOIDC, errors: typeof import('oidc-provider').errors): string {
  if (ctx.oidc.params?.grant_type !== 'client_credentials') return SCOPES.join(' ')
  const asked = String(ctx.oidc.params.scope ?? '').split(' ').find(scope => (SCOPES as readonly string[]).includes(scope))
  if (asked !== undefined) throw new errors.InvalidScope('a client-credentials token carries no user scope', asked)
  return ''
}

/** How oidc-provider names the single-use grant sources in its errors (lib/actions/grants/*.js). */
const USED_AGAIN_LABELS: Record<string, string> = {
  AuthorizationCode: 'authorization code',
  DeviceCode: 'device code',
  BackchannelAuthenticationRequest: 'backchannel authentication request'
}

/**
 * The OAuth 2.1 / OpenID Connect provider: oidc-provider (OpenID Certified) does the protocol; the
 * service gives it its store (core/oauth/adapter.ts), its signing keys (one JWKS for everything the
 * service signs), its users (findAccount, `sub` = the user id) and its pages (routes/oauth/). Apps'
 * access tokens are RFC 9068 JWTs carrying the grant's Token Status List index, so an API checks
 * revocation from the cached list. The provider is built again when the signing keys change: its
 * keystore is fixed at construction, and every state it keeps is in the store.
 */
export function createOAuthProvider (deps: OAuthProviderDependencies, options: OAuthProviderOptions): OAuthProvider {
  const { store, accessTokens, statusLists, grantSessions, providerSessions, clientTokens, clock, log } = deps
  // oidc-provider's class once loaded: its Provider.ctx is the request under way (the adapter finds a reference only for its interaction).
  let providerModule: typeof import('oidc-provider') | undefined
  const requestInteraction = () => providerModule?.default.ctx?.oidc?.entities.Interaction as Record<string, unknown> | undefined
  // A single-use model used again, in oidc-provider's words for a reuse it sees itself (lib/helpers/grant_source.js,
  // lib/actions/grants/refresh_token.js, lib/actions/authorization/respond.js): a pushed request is the client's
  // invalid_request_uri, a code or a refresh token invalid_grant.
  const usedAgain = (kind: string): Error => {
    const errors = providerModule?.errors
    if (errors === undefined) return new Error(`${kind} already consumed`)
    if (kind === 'PushedAuthorizationRequest') return new errors.InvalidRequestUri('request_uri is invalid, expired, or was already used')
    return new errors.InvalidGrant(kind === 'RefreshToken' ? 'refresh token already used' : `${USED_AGAIN_LABELS[kind] ?? kind} already consumed`)
  }
  const Adapter = createAdapterClass({ store, grantSessions, clock, providerSessions, requestInteraction, usedAgain })
  const tokenClaims = createTokenClaims({ store, statusLists, clientTokens, grantSessions, clock, log, accessTokenTtlSeconds: options.accessTokenTtlSeconds })
  const resourceServers = createResourceServers({ store, clock })

  async function userOf (sub: string): Promise<UserRecord | undefined> {
    const id = userIdOf(sub)
    return id === undefined ? undefined : await store.findUserById(id)
  }

  const claims = userClaims(options.variant)

  /** The provider's account of `sub` (its findAccount); undefined for a user gone or disabled. */
  async function accountOf (sub: string): Promise<Account | undefined> {
    const user = await userOf(sub)
    // A disabled user is no account: no new authorization, no refresh, no userinfo for it.
    if (user === undefined || user.disabledAt !== null) return undefined
    return {
      accountId: sub,
      // The memberships only when the token asks for the scope: one read, not one per ID token of every app.
      claims: async (_use, scope) => scope.split(' ').includes(ORGANIZATIONS_SCOPE)
        ? { ...claims.ofUser(user), organizations: await organizationsClaim(store, user.id) }
        : claims.ofUser(user)
    }
  }
  const adapter = new Adapter('Grant')
  const revokeGrant = (grantId: string) => adapter.revokeByGrantId(grantId)

  const appTokens = appTokenChecks({
    appTokens: accessTokens.appTokenVerifier(options.issuer),
    grantSessions,
    clientTokens,
    issuer: options.issuer,
    async userinfo (sub, scopes) {
      const id = userIdOf(sub)
      const kept = id === undefined ? undefined : await deps.users.findWithEmailVerified(id)
      if (kept === undefined || id === undefined) return undefined
      const answer = claims.forScopes(kept, scopes)
      // Memberships change apart from the user (no user cache holds them): read at each userinfo that asks.
      if (scopes.has(ORGANIZATIONS_SCOPE)) answer.organizations = await organizationsClaim(store, id)
      return answer
    },
    knownUserinfo (sub, scopes) {
      // The memberships are not in memory: such a userinfo takes the path that reads them.
      if (scopes.has(ORGANIZATIONS_SCOPE)) return undefined
      const id = userIdOf(sub)
      const kept = id === undefined ? undefined : deps.users.peekWithEmailVerified(id)
      return kept === undefined ? undefined : claims.keptForScopes(kept, scopes)
    }
  })
  const answerStructuredTokens = structuredTokens({ checks: appTokens, clientTokens, revokeGrant, issuer: options.issuer })

  /**
   * What an access token for `resource` is (oidc-provider's ResourceServer info): a JWT signed with `alg` for the
   * service itself (the issuer, with the user scopes `userScope` gives) or a registered API; undefined for any other.
   */
  async function resourceServerInfo (resource: string, userScope: () => string, alg: ProviderKeys['service']['alg']): Promise<ResourceServer | undefined> {
    const format = { accessTokenTTL: options.accessTokenTtlSeconds, accessTokenFormat: 'jwt', jwt: { sign: { alg } } } as const
    if (resource === options.issuer) return { scope: userScope(), audience: options.issuer, ...format }
    const api = await resourceServers.find(resource)
    return api === undefined ? undefined : { scope: api.scopes.join(' '), audience: api.uri, ...format }
  }

  function build ({ default: ProviderClass, interactionPolicy, errors, ExternalSigningKey }: typeof import('oidc-provider'), cookieKeys: string[], signingKeys: ProviderKeys): Provider {
    const jwk = signingKeys.service
    const provider = new ProviderClass(options.issuer, {
      adapter: Adapter,
      // Both signing keys, then the retired ones that still verify an id_token_hint (core/oauth/provider-keys.ts).
      jwks: providerKeystore(ExternalSigningKey, signingKeys),
      // RS256 is OpenID Connect's mandatory algorithm, and the default of an app that names none (EdDSA on request).
      enabledJWA: { idTokenSigningAlgValues: ['RS256', jwk.alg] },
      clientDefaults: {
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: 'RS256'
      },
      clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
      responseTypes: ['code'],
      // PKCE S256 for every client (OAuth 2.1), but a confidential one the operator registered with
      // `clients add --pkce optional` (one that cannot send it: passport-openidconnect, the conformance basic plan).
      pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' || (client as unknown as { pkce?: string }).pkce !== 'optional' },
      scopes: [...SCOPES],
      claims: claimsOf(options.variant),
      conformIdTokenClaims: false,
      extraClientMetadata: {
        properties: ['trusted', 'pkce'],
        // `trusted` (no consent page) and `pkce: 'optional'` are the operator's alone: the CLI writes them to the
        // store, and a client read from the store is built without a request (ctx undefined). A client built from
        // a request's body (RFC 7591 registration, RFC 7592 update) never gets them, whatever the body says.
        validator (ctx, key, value, metadata) {
          if (key === 'trusted') metadata.trusted = ctx === undefined && value === true
          if (key === 'pkce') metadata.pkce = ctx === undefined && value === 'optional' ? 'optional' : 'required'
        }
      },
      cookies: { keys: cookieKeys },
      routes: OAUTH_ROUTES,
      interactions: { url: (_ctx, interaction) => interactionPath(interaction.uid), policy: providerInteractionPolicy(interactionPolicy) },
      ttl: {
        AccessToken: options.accessTokenTtlSeconds,
        ClientCredentials: options.accessTokenTtlSeconds,
        AuthorizationCode: 60,
        DeviceCode: 600,
        IdToken: ID_TOKEN_TTL_SECONDS,
        Interaction: 3600,
        RefreshToken: options.refreshTokenTtlSeconds,
        Grant: options.grantTtlSeconds,
        Session: options.grantTtlSeconds
      },
      features: {
        externalSigningSupport: EXTERNAL_SIGNING,
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        // DPoP (RFC 9449): a token asked for with a proof is bound to its key (cnf.jkt; a public client's
        // refresh token too). The token endpoint takes only a proof with a nonce of ours (use_dpop_nonce
        // gives one), so a proof made in advance is worth nothing; elsewhere a nonce is checked when given
        // and asked for when the proof is not recent. Userinfo's check of the binding: structured-tokens.ts.
        dPoP: { enabled: true, nonceSecret: dpopNonceSecret(cookieKeys[0]), requireNonce: (ctx) => ctx.oidc.route === 'token' },
        introspection: {
          enabled: true,
          // A client learns only of its own tokens.
          allowedPolicy: async (_ctx, client, token) => client.clientAuthMethod !== 'none' && token.clientId === client.clientId
        },
        // A client revokes only its own tokens (RFC 7009 §2.1): another's is refused (unauthorized_client) to an
        // authenticated client; a public client, which anyone may name, hears 200 and learns nothing of the token.
        revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => revocationAllowed(client, token.clientId, errors) },
        rpInitiatedLogout: { enabled: true, logoutSource: logoutPage, postLogoutSuccessSource: loggedOutPage },
        // OpenID Back-Channel Logout 1.0: registration takes backchannel_logout_uri; delivery is core/oauth/backchannel-logout.ts.
        backchannelLogout: { enabled: true },
        deviceFlow: { enabled: true, userCodeInputSource: deviceCodePage, userCodeConfirmSource: deviceConfirmPage, successSource: deviceSuccessPage },
        // RFC 7591 registration, only with the initial access token OAUTH_REGISTRATION_TOKEN.
        registration: { enabled: options.registrationToken !== undefined, initialAccessToken: options.registrationToken ?? false } as NonNullable<Configuration['features']>['registration'],
        // Apps' access tokens are JWTs (RFC 9068). Their resource (RFC 8707) is the service's own, the issuer,
        // with the user scopes, unless the app names a registered API (`resources add`, core/oauth/resource-servers.ts):
        // then `aud` is the API and the token carries the API's scopes; any other resource is invalid_target.
        // A token without an audience (only good at userinfo) would be opaque; routes/oauth answers userinfo
        // for these JWTs itself.
        resourceIndicators: {
          enabled: true,
          defaultResource: async () => options.issuer,
          useGrantedResource: async () => true,
          async getResourceServerInfo (ctx, resource) {
            const info = await resourceServerInfo(resource, () => userScopesFor(ctx, errors), jwk.alg)
            if (info === undefined) throw new errors.InvalidTarget()
            return info
          }
        }
      },
      // The token's status entry and grant (core/oauth/token-claims.ts).
      extraTokenClaims: async (_ctx, token) => await tokenClaims.extraTokenClaims(token).catch((error: unknown) => {
        throw error instanceof GrantEndedError ? new errors.InvalidGrant('grant not found') : error
      }),
      findAccount: async (_ctx, sub) => await accountOf(sub),
      // A first-party app (clients add --trusted) gets the scopes it asks for without a consent page.
      async loadExistingGrant (ctx: KoaContextWithOIDC) {
        const { client, session, provider: current } = ctx.oidc
        if (client === undefined || session?.accountId === undefined) return undefined
        const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId)
        if (grantId !== undefined) return await current.Grant.find(grantId)
        if ((client as unknown as { trusted?: boolean }).trusted !== true) return undefined
        const grant = new current.Grant({ clientId: client.clientId, accountId: session.accountId })
        const scope = String(ctx.oidc.params?.scope ?? 'openid')
        grant.addOIDCScope(scope)
        // Each resource asked for (the issuer by default; a registered API): its tokens carry only that resource's scopes of these.
        for (const resource of Object.keys(ctx.oidc.resourceServers ?? { [options.issuer]: undefined })) grant.addResourceScope(resource, scope)
        await grant.save()
        return grant
      },
      // Apps signed in the browser by the SPA itself (public clients) may call the token, userinfo and
      // revocation endpoints from their registered origins.
      clientBasedCORS (ctx, origin, client) {
        if (origin === 'null') return false
        return client.redirectUris?.some(uri => URL.parse(uri)?.origin === origin) === true &&
          (client.clientAuthMethod === 'none' || ctx.oidc.route === 'userinfo')
      },
      renderError: errorPage,
      async pairwiseIdentifier (_ctx, accountId) { return accountId }
    })
    provider.proxy = options.trustProxy
    // Stored secrets are hashes (core/oauth/clients.ts): the presented one is hashed to compare.
    provider.Client.prototype.compareClientSecret = async function (this: { clientSecret?: string }, actual: string) {
      return this.clientSecret !== undefined && clientSecretMatches(this.clientSecret, actual)
    }
    // Every ID token names its session for the app (`sid`, listed in claims_supported), as back-channel logout tokens do.
    provider.Client.prototype.includeSid = () => true
    // RP-initiated logout names the grant it ends through the request's provider Session.
    deps.backchannelLogout.install(provider, (clientId) => ProviderClass.ctx?.oidc?.session?.grantIdFor(clientId))
    provider.use(pinToPublicUrl(options.issuer))
    provider.use(discoveryForAnyOrigin)
    provider.use(deviceLinkCsp(OAUTH_ROUTES.code_verification))
    provider.use(formPostCsp(OAUTH_ROUTES.authorization))
    provider.use(answerAsTheRfcsSay)
    provider.use(answerStructuredTokens)
    provider.use(answerUnknownPaths)
    provider.use(tieSessions(providerSessions))
    provider.on('server_error', (_ctx: unknown, error: Error) => { log.error({ err: error }, 'OAuth provider error') })
    return provider
  }

  // Built on first use, not at start: its cookie key is read from (or first written to) the store, and a
  // start on a store that cannot be written yet must still serve the rest (the first request gets its 503).
  let cookieKeys: Promise<string[]> | undefined
  let built: { provider: Provider, callback: ReturnType<Provider['callback']>, signingKeys: ProviderKeys, tokenGrants: Map<string, TokenGrant> } | undefined

  async function currentBuild (): Promise<NonNullable<typeof built>> {
    cookieKeys ??= deps.cookieKeys().catch((error: unknown) => {
      cookieKeys = undefined
      throw error
    })
    const keys = await cookieKeys
    const signingKeys = await accessTokens.providerKeys()
    if (built?.signingKeys !== signingKeys) {
      // Loaded on first use: the start stays quick, and Node 20 hears oidc-provider's "Unsupported runtime"
      // only when an app first signs in (never beside a setting's one-line refusal at start).
      providerModule = await import('oidc-provider')
      const provider = build(providerModule, keys, signingKeys)
      // The grants' common cases sign as the provider does: with the service key's algorithm; a client-credentials
      // token asks for no user scope, a code's token for the users' scopes (userScopesFor).
      const alg = signingKeys.service.alg
      const tokenGrants = new Map<string, TokenGrant>([
        ['client_credentials', clientCredentialsGrant(provider, {
          issuer: options.issuer,
          userScopes: SCOPES,
          resourceServerInfo: async (resource) => await resourceServerInfo(resource, () => '', alg)
        })],
        ['authorization_code', authorizationCodeGrant(provider, {
          findAccount: accountOf,
          resourceServerInfo: async (resource) => await resourceServerInfo(resource, () => SCOPES.join(' '), alg),
          log
        })]
      ])
      built = { provider, callback: provider.callback(), signingKeys, tokenGrants }
    }
    return built
  }

  async function current (): Promise<Provider> {
    return (await currentBuild()).provider
  }

  // The last host that parsed: nearly every request names the same one, and URL.canParse cost userinfo's
  // common case more than its token check did (issue 34). One string, so nothing a client sends piles up.
  let acceptedHost = ''
  return {
    current,
    acceptsHost (req) {
      const forwarded = options.trustProxy ? req.headers['x-forwarded-host'] : undefined
      const host = (typeof forwarded === 'string' && forwarded !== '' ? forwarded.split(',')[0].trim() : req.headers.host) ?? ''
      // An empty host is Koa's '' and makes "http:///path", which parses: only a malformed one fails.
      if (host === '' || host === acceptedHost) return true
      if (!URL.canParse(`http://${host}/`)) return false
      acceptedHost = host
      return true
    },
    handle (req, res) {
      if (built === undefined) throw new Error('the OAuth provider is handed a request before current() resolved')
      // Koa answers its own errors; a rejection here would be a fault of its own, logged rather than left unhandled.
      Promise.resolve(built.callback(req, res)).catch((error: unknown) => { log.error({ err: error }, 'OAuth provider request failed') })
    },
    async tokenFastPath (request) {
      // The form is read once here; each grant's path checks only its own parameters.
      const form = tokenFormOf(request)
      const grantType = form?.parameters.get('grant_type')
      if (form === undefined || grantType === undefined) return undefined
      const grant = (await currentBuild()).tokenGrants.get(grantType)
      return grant === undefined ? undefined : await grant(form)
    },
    revokeGrant,
    appTokens
  }
}

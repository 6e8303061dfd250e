import { hash, timingSafeEqual } from 'node:crypto'
import type Provider from 'oidc-provider'
import type { Account, ResourceServer } from 'oidc-provider'
import type { Logger } from '../logger.js'
import { authenticatedClient, credentialsOf, onlyServed, type TokenAnswer, type TokenGrant } from './token-requests.js'

/*
 * The token endpoint's authorization_code grant in its common case, served without oidc-provider's Koa stack
 * (issue 34: its middleware, its router and the service's eight hooks in it were most of an exchange). The
 * tokens are still oidc-provider's: its Client (the secret compared by the service's compareClientSecret), its
 * AuthorizationCode and Grant (found through the service's adapter, which checks the grant's session and the
 * browser session's), its AccessToken, IdToken and RefreshToken models, whose save() and issue() sign and store
 * them and call extraTokenClaims (the status entry, core/oauth/token-claims.ts). This module mirrors oidc-provider's
 * path step by step (lib/actions/token.js, lib/actions/grants/authorization_code.js, lib/helpers/grant_common.js),
 * so the answer and the tokens are those oidc-provider gives; test/routes/oauth/code-exchange-fast-path.test.ts
 * compares the two.
 *
 * Only a request that succeeds there is served here; anything else is undefined, checked before the code is spent,
 * and the caller hands the request to oidc-provider unchanged, which answers it: another grant or parameter
 * (scope, resource), a DPoP proof or a code bound to a DPoP key, a client attestation, a browser's request (CORS),
 * a client unknown, not allowed the grant, bound to DPoP or mTLS, or with a wrong or expiring secret, a code unknown,
 * expired, spent (oidc-provider ends its grant) or another client's, a grant ended, a PKCE verifier that does not
 * hold, another redirect_uri, a user gone or disabled, a code with a claims request or authorization details.
 *
 * Both tokens are signed before the code is spent, so a failure there goes to oidc-provider too. Spending it is
 * the point of no return: a code spent meanwhile by another request is answered invalid_grant (the adapter has
 * ended its grant); a refresh token that cannot be stored after it, server_error, as oidc-provider answers both.
 */

/** The form parameters served here; any other sends the request to oidc-provider. */
const SERVED_PARAMETERS = new Set(['grant_type', 'code', 'redirect_uri', 'code_verifier', 'client_id', 'client_secret'])

/** RFC 7636 §4.1's code_verifier, as oidc-provider's pkce_format.js checks it. */
const CODE_VERIFIER = /^[\w.\-~]{43,128}$/

const GRANT_TYPE = 'authorization_code'

export interface AuthorizationCodeGrantOptions {
  /** The provider's findAccount (its configuration): the account of a code's `sub`, undefined for a user gone or disabled. */
  findAccount (sub: string): Promise<Account | undefined>
  /** The ResourceServer info of a code's resource (resourceIndicators.getResourceServerInfo); undefined: invalid_target. */
  resourceServerInfo (resource: string): Promise<ResourceServer | undefined>
  log: Pick<Logger, 'error'>
}

/** Whether the PKCE verifier holds for the code's challenge (RFC 7636 §4.6, oidc-provider's checkPKCE; S256 only). */
function pkceHolds (verifier: string | undefined, challenge: unknown, method: unknown): boolean {
  if (verifier === undefined && challenge === undefined) return true
  if (verifier === undefined || typeof challenge !== 'string' || method !== 'S256') return false
  const expected = Buffer.from(hash('sha256', verifier, 'base64url'))
  const given = Buffer.from(challenge)
  return expected.length === given.length && timingSafeEqual(expected, given)
}

/** The answer oidc-provider gives an error after the code is spent: its own (invalid_grant), else server_error, logged. */
function errorAnswer (error: unknown, log: Pick<Logger, 'error'>): TokenAnswer {
  const { expose, message, error_description: description, statusCode } = error as { expose?: boolean, message?: string, error_description?: string, statusCode?: number }
  if (expose === true && typeof message === 'string' && typeof statusCode === 'number') {
    return { statusCode, body: description === undefined ? { error: message } : { error: message, error_description: description } }
  }
  log.error({ err: error }, 'OAuth provider error')
  return { statusCode: 500, body: { error: 'server_error', error_description: 'oops! something went wrong' } }
}

/** The grant's common case against `provider` (a form whose grant_type is authorization_code): the answer, or undefined for oidc-provider to answer it. */
export function authorizationCodeGrant (provider: Provider, { findAccount, resourceServerInfo, log }: AuthorizationCodeGrantOptions): TokenGrant {
  return async function serve (form) {
    const { parameters } = form
    if (!onlyServed(parameters, SERVED_PARAMETERS)) return undefined
    const value = parameters.get('code')
    const redirectUri = parameters.get('redirect_uri')
    const verifier = parameters.get('code_verifier')
    // No redirect_uri is oidc-provider's to fill in (a client with one registered) or refuse.
    if (value === undefined || redirectUri === undefined || (verifier !== undefined && !CODE_VERIFIER.test(verifier))) return undefined
    const credentials = credentialsOf(form, { publicClients: true })
    if (credentials === undefined) return undefined

    const client = await authenticatedClient(provider, credentials)
    if (client?.grantTypeAllowed(GRANT_TYPE) !== true) return undefined
    // Sender-constrained clients (DPoP, mTLS) need a proof this path does not take.
    if (client.dpopBoundAccessTokens === true || client.tlsClientCertificateBoundAccessTokens === true) return undefined

    const code = await provider.AuthorizationCode.find(value, { ignoreExpiration: true })
    if (code === undefined || code.clientId !== client.clientId || code.isExpired || (code as { consumed?: unknown }).consumed !== undefined) return undefined
    // A code bound to a key or carrying what this path does not mirror (a claims request, authorization details).
    if (code.dpopJkt !== undefined || code.attestationJkt !== undefined || code.rar !== undefined || code.claims !== undefined) return undefined
    // The resource granted with the code (the issuer, or a registered API), as useGrantedResource has it.
    const { resource, scope: codeScope } = code
    if (typeof resource !== 'string' || typeof codeScope !== 'string' || typeof code.grantId !== 'string' || typeof code.accountId !== 'string') return undefined

    const grant = await provider.Grant.find(code.grantId, { ignoreExpiration: true })
    if (grant === undefined || grant.isExpired || grant.clientId !== client.clientId || grant.accountId !== code.accountId) return undefined
    if (!pkceHolds(verifier, code.codeChallenge, code.codeChallengeMethod) || code.redirectUri !== redirectUri) return undefined
    const account = await findAccount(code.accountId)
    if (account === undefined) return undefined
    const info = await resourceServerInfo(resource)
    if (info === undefined) return undefined

    const at = new provider.AccessToken({
      accountId: account.accountId,
      client,
      expiresWithSession: code.expiresWithSession,
      grantId: code.grantId,
      gty: GRANT_TYPE,
      sessionUid: code.sessionUid,
      sid: code.sid
    })
    const resourceServer = new provider.ResourceServer(resource, info)
    at.resourceServer = resourceServer
    at.scope = grant.getResourceScopeFiltered(resource, [...code.scopes].filter(scope => resourceServer.scopes.has(scope)))
    const accessToken = await at.save()

    let idToken: string | undefined
    if (code.scopes.has('openid')) {
      const rejected = grant.getRejectedOIDCClaims()
      const token = new provider.IdToken({
        ...await account.claims('id_token', codeScope, {}, rejected),
        sub: account.accountId,
        acr: code.acr,
        amr: code.amr,
        auth_time: code.authTime
      }, { client })
      // What oidc-provider's issueIdToken sets beside the claims (its types do not name them): no claims request to mask.
      Object.assign(token, { scope: grant.getOIDCScopeFiltered(code.scopes), mask: {}, rejected })
      token.set('nonce', code.nonce)
      token.set('sid', code.sid)
      idToken = await token.issue({ use: 'idtoken' })
    }

    let refreshToken: string | undefined
    try {
      await code.consume()
      if (client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access')) {
        // A public client's refresh token would take the access token's binding; this path issues none bound.
        refreshToken = await new provider.RefreshToken({
          accountId: code.accountId,
          acr: code.acr,
          amr: code.amr,
          authTime: code.authTime,
          claims: code.claims,
          client,
          expiresWithSession: code.expiresWithSession,
          grantId: code.grantId,
          gty: GRANT_TYPE,
          nonce: code.nonce,
          resource: code.resource,
          rotations: 0,
          scope: codeScope,
          sessionUid: code.sessionUid,
          sid: code.sid
        }).save()
      }
    } catch (error) {
      return errorAnswer(error, log)
    }

    const body: Record<string, unknown> = { access_token: accessToken, expires_in: at.expiration }
    if (idToken !== undefined) body.id_token = idToken
    if (refreshToken !== undefined) body.refresh_token = refreshToken
    // oidc-provider's `source.scope ? at.scope : (at.scope || undefined)`.
    const scope = codeScope !== '' ? at.scope : (at.scope === '' ? undefined : at.scope)
    if (scope !== undefined) body.scope = scope
    body.token_type = at.tokenType
    return { statusCode: 200, body }
  }
}

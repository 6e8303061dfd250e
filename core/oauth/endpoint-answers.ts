import type { KoaContextWithOIDC } from 'oidc-provider'
import { HASHED_SECRET_PREFIX } from './clients.js'

/*
 * oidc-provider's answers where a relying party expects what the RFCs say, fixed after it answered: one
 * place for the small deviations (issue 34, items 8 and 11). Each rule names the RFC it follows.
 */

/** How long a device waits between two polls of the token endpoint (RFC 8628 §3.2: 5 s when none is named). */
export const DEVICE_POLL_INTERVAL_SECONDS = 5

/**
 * Whether `client` may revoke a token issued to `tokenClientId` (RFC 7009 §2.1): its own, yes; another's is
 * refused to an authenticated client (unauthorized_client), while a public client, which anyone may name,
 * hears the same 200 as for any token and learns nothing of it.
 */
export function revocationAllowed (client: { clientId: string, clientAuthMethod?: string }, tokenClientId: unknown, errors: typeof import('oidc-provider').errors): boolean {
  if (tokenClientId === client.clientId) return true
  if (client.clientAuthMethod === 'none') return false
  throw new errors.UnauthorizedClient('the token was not issued to this client')
}

type Body = Record<string, unknown> | string | undefined

/** The routes a client authenticates at (RFC 6749 §2.3): a request naming no client there is the client's failure. */
const CLIENT_AUTH_ROUTES = new Set(['token', 'introspection', 'revocation', 'device_authorization', 'pushed_authorization_request'])

export async function answerAsTheRfcsSay (ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next()
  const route = ctx.oidc?.route
  if (route === undefined) return
  const body = ctx.body as Body
  const json = typeof body === 'object' && body !== null ? body : undefined

  // RFC 6749 §5.2: no client authentication at all is invalid_client, 401 with WWW-Authenticate, not a 400.
  if (CLIENT_AUTH_ROUTES.has(route) && ctx.status === 400 && json?.error === 'invalid_request' &&
    json.error_description === 'no client authentication mechanism provided') {
    ctx.status = 401
    ctx.set('www-authenticate', `Basic realm="${ctx.oidc.issuer}"`)
    ctx.body = { error: 'invalid_client', error_description: 'no client authentication was given' }
    return
  }

  // RFC 7009 §2.2: the answer's content is ignored; every success is the same 200, empty, typed as JSON (a
  // client reading answers strictly as JSON, simple-oauth2's, takes an empty JSON answer and refuses text/plain).
  if (route === 'revocation' && ctx.status === 200) {
    ctx.body = ''
    ctx.type = 'application/json'
    return
  }

  // RFC 8628 §3.2: the device is told how often to poll.
  if (route === 'device_authorization' && ctx.status === 200 && json !== undefined && json.interval === undefined) {
    json.interval = DEVICE_POLL_INTERVAL_SECONDS
    return
  }

  // RFC 7592 §2.1: the registration is read back without the secret: the store holds its hash, which is no
  // secret the client could use (the secret is shown once, at registration).
  if ((route === 'client' || route === 'client_update') && ctx.status === 200 && json !== undefined &&
    typeof json.client_secret === 'string' && json.client_secret.startsWith(HASHED_SECRET_PREFIX)) {
    delete json.client_secret
    delete json.client_secret_expires_at
    return
  }

  // RFC 6749 §5.1: an answer's scope differing from the request's is named; a token granting none of the scopes
  // asked for (a client-credentials request naming only scopes unknown to its resource) is invalid_scope (§5.2).
  if (route === 'token' && ctx.status === 200 && json !== undefined && json.scope === undefined) {
    const asked = ctx.oidc.params?.scope
    if (typeof asked === 'string' && asked.trim() !== '') {
      ctx.status = 400
      ctx.body = { error: 'invalid_scope', error_description: 'none of the requested scopes can be granted', scope: asked }
    }
  }
}

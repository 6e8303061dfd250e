import { randomUUID } from 'node:crypto'
import type Provider from 'oidc-provider'
import type { AccountStore, RevocationRecord } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import { clientOfGrantSession, GRANT_SESSION_PREFIX, isGrantSession } from './grant-sessions.js'

/*
 * OpenID Connect Back-Channel Logout 1.0: an app registered with a `backchannel_logout_uri` is told, by a
 * logout token (a JWT signed like its ID tokens) POSTed to that URI, whenever its grant's session ends
 * because the user signed out: RP-initiated logout, sign-out everywhere, a password change, an operator
 * disabling the user or revoking their sessions. These are the events the status list carries: each writes
 * a revocation-log row for the grant's session (`oauth.<grant id>`), which every instance reads. Any end of
 * a grant's session tells its app: also the user removing the app under "Apps with access", or a replayed
 * refresh token ending the grant; not the app's removal (no client to tell), nor a user's deletion.
 *
 * One instance delivers each: the first to claim the grant (a stored row of kind BackchannelLogout).
 * RP-initiated logout is oidc-provider's own path (features.backchannelLogout): it calls the client's
 * backchannelLogout(sub, sid) before revoking the grants, and the provider hands that call here, which
 * claims the grant and delivers with the browser session's `sid`.
 *
 * Delivery is fire-and-forget with bounds: a POST times out after 2.5 s, at most
 * MAX_IN_FLIGHT run at once (past that one is dropped and logged), and a failure is logged, never the
 * sign-out's. Nothing is retried and nothing survives a restart (no outbox: the app's tokens stop anyway,
 * and the status list says so; a missed logout token leaves only the app's own session cookie alive).
 */

export const BACKCHANNEL_CLAIM_KIND = 'BackchannelLogout'
/** How long a grant's claim is kept: longer than any instance may read its revocation-log row again. */
const CLAIM_TTL_MS = 24 * 3600 * 1000
const MAX_IN_FLIGHT = 100

/** How long one POST may take, as oidc-provider's own outgoing requests. */
const DELIVERY_TIMEOUT_MS = 2500
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

/** oidc-provider's Client as far as a logout is concerned (its types do not name these). */
interface LogoutClient {
  clientId: string
  backchannelLogoutUri?: string
  backchannelLogout (sub: string, sid: string | undefined): Promise<void>
}

/** oidc-provider's IdToken as a logout token uses it. */
interface IdTokenLike {
  /** Claims issue() keeps whatever the scopes allow (`sub`, as in oidc-provider's own logout token). */
  mask: Record<string, null>
  set (claim: string, value: unknown): void
  issue (options: { use: 'logout' }): Promise<string>
}
type IdTokenClass = new (claims: Record<string, unknown>, options: { client: LogoutClient, ctx: undefined }) => IdTokenLike

/**
 * The logout token (signed by the provider as the client's ID tokens: its registered algorithm), POSTed
 * to the app. oidc-provider's own delivery refuses loopback and private addresses (its SSRF guard), where
 * an operator's apps often listen; only the operator and holders of OAUTH_REGISTRATION_TOKEN register a URI.
 */
async function postLogoutToken (IdToken: IdTokenClass, client: LogoutClient, sub: string, sid: string | undefined): Promise<void> {
  const token = new IdToken({ sub }, { client, ctx: undefined })
  token.mask = { sub: null }
  token.set('events', { [LOGOUT_EVENT]: {} })
  token.set('jti', randomUUID())
  if (sid !== undefined) token.set('sid', sid)
  const response = await fetch(String(client.backchannelLogoutUri), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ logout_token: await token.issue({ use: 'logout' }) }),
    signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS)
  })
  await response.body?.cancel()
  if (response.status !== 200 && response.status !== 204) throw new Error(`the app answered ${response.status}`)
}

export interface BackchannelLogout {
  /** A revocation-log row was read: a grant's session that ended is told to its app (core/revocations onSessionRevoked). */
  sessionRevoked (row: RevocationRecord): void
  /**
   * Installs the delivery in a newly built provider: oidc-provider's RP-initiated logout path comes here,
   * and the user-wide path signs its logout tokens with this provider.
   */
  install (provider: Provider, grantOfLogout: (clientId: string) => string | undefined): void
}

export interface BackchannelLogoutDependencies {
  store: Pick<AccountStore, 'claimOAuthModel' | 'findSession' | 'listOAuthModels'>
  /** The provider of the current signing key. */
  provider (): Promise<Provider>
  clock: Clock
  log: Logger
}

export function createBackchannelLogout ({ store, provider, clock, log }: BackchannelLogoutDependencies): BackchannelLogout {
  const inFlight = new Set<Promise<void>>()
  let send: ((client: LogoutClient, sub: string, sid: string | undefined) => Promise<void>) | undefined

  /** Whether this instance is the one to tell the app of the grant's end (false when another one, or the logout itself, did). */
  async function claim (grantId: string): Promise<boolean> {
    const now = currentDate(clock)
    return await store.claimOAuthModel(BACKCHANNEL_CLAIM_KIND, grantId, {}, new Date(now.getTime() + CLAIM_TTL_MS), now)
  }

  function deliver (client: LogoutClient, sub: string, sid: string | undefined): void {
    if (send === undefined) return
    if (inFlight.size >= MAX_IN_FLIGHT) {
      log.warn({ clientId: client.clientId }, 'back-channel logout dropped: too many deliveries under way')
      return
    }
    const delivery = send(client, sub, sid)
      .catch((error: unknown) => { log.warn({ err: error, clientId: client.clientId }, 'back-channel logout not delivered') })
      .finally(() => { inFlight.delete(delivery) })
    inFlight.add(delivery)
  }

  /** The browser session's sid of the grant, from the user's stored provider Sessions (oidc-provider's authorizations). */
  async function sidOf (accountId: string, clientId: string, grantId: string): Promise<string | undefined> {
    for (const session of await store.listOAuthModels('Session', currentDate(clock), { accountId })) {
      const authorization = (session.payload.authorizations as Record<string, { sid?: string, grantId?: string }> | undefined)?.[clientId]
      if (authorization?.grantId === grantId && typeof authorization.sid === 'string') return authorization.sid
    }
    return undefined
  }

  async function grantEnded (sessionId: string, grantId: string, userId: number): Promise<void> {
    // The grant's session row outlives the grant (deleted when an app is revoked), and names its client.
    const session = await store.findSession(sessionId)
    const clientId = session === undefined ? undefined : clientOfGrantSession(session)
    if (clientId === undefined) return
    const accountId = String(userId)
    const current = await provider()
    const client = await current.Client.find(clientId) as LogoutClient | undefined
    if (client?.backchannelLogoutUri === undefined || !await claim(grantId)) return
    deliver(client, accountId, await sidOf(accountId, clientId, grantId))
  }

  return {
    sessionRevoked (row) {
      if (row.sessionId === null || !isGrantSession(row.sessionId) || row.userDeleted) return
      grantEnded(row.sessionId, row.sessionId.slice(GRANT_SESSION_PREFIX.length), row.userId)
        .catch((error: unknown) => { log.warn({ err: error }, 'back-channel logout not sent') })
    },
    install (built, grantOfLogout) {
      const prototype = built.Client.prototype as unknown as LogoutClient
      const IdToken = built.IdToken as unknown as IdTokenClass
      send = async (client, sub, sid) => { await postLogoutToken(IdToken, client, sub, sid) }
      // oidc-provider awaits this in the logout request: it claims and returns, the POST goes on after.
      prototype.backchannelLogout = async function (this: LogoutClient, sub, sid) {
        const grantId = grantOfLogout(this.clientId)
        if (grantId !== undefined && !await claim(grantId)) return
        deliver(this, sub, sid)
      }
    }
  }
}

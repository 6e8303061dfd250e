import type { AccountStore } from '../../db/store.js'
import { ORGANIZATIONS_SCOPE, organizationsClaim, userIdOf } from './user-claims.js'
import type { Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import type { StatusLists } from '../revocations/status-lists.js'
import { TouchThrottle } from '../sessions/touch-throttle.js'
import { STATUS_INDEX_FIELD } from './adapter.js'
import type { ClientTokenStatus } from './client-token-status.js'
import type { GrantSessions } from './grant-sessions.js'

/*
 * What the service adds to an app's access token (oidc-provider's extraTokenClaims, core/oauth/provider.ts):
 * its `status` entry in the Token Status List, by which every API learns of a revocation, and the grant it
 * belongs to (`grant_id`), by which introspection, revocation and userinfo find a grant oidc-provider does
 * not store a JWT of.
 */

/**
 * The grant of a token being signed is gone: revoked since oidc-provider read it (a code or a refresh token spent
 * twice at once, the loser ended the grant: core/oauth/adapter.ts consume). No token is signed for it, rather than
 * one without a status entry, which no API could learn was revoked. core/oauth/provider.ts answers it invalid_grant.
 */
export class GrantEndedError extends Error {}

export interface TokenClaimsDependencies {
  store: Pick<AccountStore, 'findOAuthModel' | 'membershipsOfUser'>
  statusLists: Pick<StatusLists, 'claim'>
  clientTokens: Pick<ClientTokenStatus, 'issue'>
  grantSessions: Pick<GrantSessions, 'touch'>
  clock: Clock
  log: Logger
  accessTokenTtlSeconds: number
}

/** The part of an oidc-provider token these claims read. */
interface IssuedToken {
  kind: string
  clientId?: unknown
  jti?: unknown
  grantId?: unknown
  /** The user a token of a grant is for (its `sub`), and the scopes it carries. */
  accountId?: unknown
  scope?: unknown
}

export interface TokenClaims {
  /** The claims added to a token as it is signed; undefined for a token that carries none. */
  extraTokenClaims (token: IssuedToken): Promise<Record<string, unknown> | undefined>
}

export function createTokenClaims ({ store, statusLists, clientTokens, grantSessions, clock, log, accessTokenTtlSeconds }: TokenClaimsDependencies): TokenClaims {
  const statusIndexes = new Map<string, number>()
  const touches = new TouchThrottle()

  /**
   * The status index of a grant's session (its access tokens' `status` claim), from memory or the store; undefined
   * for a grant stored without one. Throws GrantEndedError when the grant is not there.
   */
  async function statusIndexOf (grantId: string): Promise<number | undefined> {
    const known = statusIndexes.get(grantId)
    if (known !== undefined) return known
    const grant = await store.findOAuthModel('Grant', grantId, new Date(clock.now()))
    if (grant === undefined) throw new GrantEndedError(`grant ${grantId} not found`)
    const index = grant.payload[STATUS_INDEX_FIELD]
    if (typeof index !== 'number') return undefined
    // Grants are few next to requests; a bound keeps a long-lived process from holding every grant ever.
    if (statusIndexes.size >= 100_000) statusIndexes.clear()
    statusIndexes.set(grantId, index)
    return index
  }

  return {
    async extraTokenClaims (token) {
      // A client-credentials token gets a status entry of its own, so that revoking it works as for any other.
      if (token.kind === 'ClientCredentials' && typeof token.clientId === 'string' && typeof token.jti === 'string') {
        const expiresAt = new Date(clock.now() + accessTokenTtlSeconds * 1000)
        return { status: statusLists.claim(await clientTokens.issue({ clientId: token.clientId, jti: token.jti, expiresAt })) }
      }
      if (token.kind !== 'AccessToken' || typeof token.grantId !== 'string') return undefined
      const statusIndex = await statusIndexOf(token.grantId)
      if (touches.due(token.grantId, clock.now())) {
        grantSessions.touch(token.grantId).catch((error: unknown) => { log.warn({ err: error }, 'an app\'s last use not recorded') })
      }
      const extra: Record<string, unknown> = statusIndex === undefined ? { grant_id: token.grantId } : { grant_id: token.grantId, status: statusLists.claim(statusIndex) }
      // The `organizations` scope: the user's memberships as the token is signed (the same claim as the ID token's).
      const userId = typeof token.accountId === 'string' ? userIdOf(token.accountId) : undefined
      if (userId !== undefined && typeof token.scope === 'string' && token.scope.split(' ').includes(ORGANIZATIONS_SCOPE)) {
        extra.organizations = await organizationsClaim(store, userId)
      }
      return extra
    }
  }
}

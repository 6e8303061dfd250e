import { randomUUID } from 'node:crypto'
import { currentDate, type Clock } from '../clock.js'
import type { FoundRefreshToken, SessionsStore } from '../../db/store.js'
import {
  AccountDisabledError, InvalidRefreshTokenError, OrgNotFoundError, ReauthenticationRequiredError, RefreshTokenReusedError, SessionExpiredError,
  SecondFactorRequiredError, SessionNotFoundError, SessionRevokedError, TokenMismatchError
} from '../errors.js'
import { assignRandomStatusIndex } from '../revocations/status-list.js'
import { TouchThrottle } from './touch-throttle.js'
import { methodsOf, storedMethods, usedSecondFactor, type AuthenticationMethod } from './authentication-methods.js'
import { hashToken, newRandomToken } from '../tokens/random-token.js'
import type { AccessTokenClaims, AccessTokens, ActiveOrganisationClaim } from '../tokens/access-tokens.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { StatusLists } from '../revocations/status-lists.js'

/** The tokens a login or refresh hands out. refreshToken is absent when the refresh token was not replaced. */
export interface IssuedTokens {
  userId: number
  sessionId: string
  accessToken: string
  refreshToken?: string
  /** Seconds until refreshToken expires, counted from its issue: never past the session's absolute end (SESSION_MAX_AGE). */
  refreshTokenMaxAge?: number
}

export type StartedSession = Required<IssuedTokens>

export interface RefreshOptions {
  /** Replace the refresh token (cookie variant) or keep it until it expires (header variant). */
  rotate: boolean
  /** Refuse (TOKEN_MISMATCH) unless the refresh token belongs to this user. */
  expectedUserId?: number
}

export interface Sessions {
  /**
   * A new session after a sign-in by `methods` (core/sessions/authentication-methods.ts); `authenticatedAt`
   * (default now) is when that proof was made.
   */
  start (userId: number, client: Client, options: { methods: AuthenticationMethod[], authenticatedAt?: Date }): Promise<StartedSession>
  /** Throws INVALID_REFRESH_TOKEN, REFRESH_TOKEN_REUSED, SESSION_EXPIRED or TOKEN_MISMATCH (all 401), ACCOUNT_DISABLED (403). */
  refresh (refreshToken: string, options: RefreshOptions, client: Client): Promise<IssuedTokens>
  /**
   * New tokens for the session of `claims` after a change that keeps it (a password change): the
   * presented refresh token is rotated when it is this session's; otherwise only a new access
   * token is issued (the session's refresh token stays valid).
   */
  renew (claims: AccessTokenClaims, refreshToken: string | undefined, client: Client): Promise<IssuedTokens>
  /** Revokes the session the refresh token belongs to; an unknown or revoked token changes nothing. */
  end (refreshToken: string, client: Client): Promise<void>
  /** Revokes one session of the user; 404 SESSION_NOT_FOUND when it is not one of theirs. */
  endOne (userId: number, sessionId: string, client: Client): Promise<void>
  /** Revokes every session of the user but `exceptSessionId`; returns how many were live. */
  endAll (userId: number, client: Client, options?: { exceptSessionId?: string }): Promise<number>
  /** 403 REAUTHENTICATION_REQUIRED unless the session's last password proof is within REAUTH_MAX_AGE. */
  requireFresh (sessionId: string): Promise<void>
  /** Records a new proof in the session (re-authentication) made with `methods`, added to the session's own. */
  markAuthenticated (sessionId: string, methods: AuthenticationMethod[]): Promise<void>
  /** When the session's last proof was, and every method the user proved itself with in it; 401 SESSION_REVOKED when the session is gone. */
  proof (sessionId: string): Promise<{ authenticatedAt: Date, methods: AuthenticationMethod[] }>
  /** When the session's last password proof was; 401 SESSION_REVOKED when the session is gone. */
  authenticatedAt (sessionId: string): Promise<Date>
  /**
   * 403 SECOND_FACTOR_REQUIRED unless the user used a second factor (TOTP, a recovery code, a passkey) in this session:
   * at its sign-in or a re-authentication since.
   */
  requireSecondFactor (sessionId: string): Promise<void>
  /**
   * Makes the organisation active in the session of `claims` and answers with an access token carrying it
   * (`org`); refreshes keep it while the membership lasts. 404 ORG_NOT_FOUND unless the user is a member.
   */
  activateOrganisation (claims: AccessTokenClaims, orgId: number): Promise<IssuedTokens>
  /** Drops the session's active organisation: an access token without `org`, and refreshes without it. */
  deactivateOrganisation (claims: AccessTokenClaims): Promise<IssuedTokens>
}

/** The membership an activation reads (db/store/organisations.ts): the one of the user in the organisation, with its slug and role. */
export interface OrganisationMemberships {
  membershipOf (orgId: number, userId: number): Promise<{ orgId: number, slug: string, role: string } | undefined>
}

export interface SessionsOptions {
  refreshTokenTtlSeconds: number
  refreshReuseGraceSeconds: number
  sessionMaxAgeSeconds: number
  reauthMaxAgeSeconds: number
}

export interface SessionsDependencies {
  store: SessionsStore
  clock: Clock
  accessTokens: Pick<AccessTokens, 'sign'>
  securityEvents: Pick<SecurityEvents, 'record'>
  statusList: Pick<StatusLists, 'claim'>
  memberships: OrganisationMemberships
}

/**
 * Sessions are refresh-token families. A login starts one; each rotation adds
 * the successor token and marks its predecessor rotated. Presenting a rotated
 * token within the grace period (tabs refreshing at once) still gets an access
 * token; after it, the presenter is assumed to hold a stolen copy and the whole
 * family is revoked (RFC 9700, section 4.14). A session lives at most
 * SESSION_MAX_AGE from its login however often it is refreshed, and remembers
 * when its user last proved the password (re-authentication).
 */
export function createSessions ({ store, clock, accessTokens, securityEvents, statusList, memberships }: SessionsDependencies, options: SessionsOptions): Sessions {
  const refreshTtlMs = options.refreshTokenTtlSeconds * 1000
  const reuseGraceMs = options.refreshReuseGraceSeconds * 1000
  const maxAgeMs = options.sessionMaxAgeSeconds * 1000
  const reauthMaxAgeMs = options.reauthMaxAgeSeconds * 1000
  const touches = new TouchThrottle()

  /** A new refresh token of the session, expiring at the earlier of its own lifetime and the session's end. */
  function newTokenRecord (userId: number, familyId: string, now: Date, sessionEndsAt: number) {
    const refreshToken = newRandomToken()
    const expiresAt = new Date(Math.min(now.getTime() + refreshTtlMs, sessionEndsAt))
    const record = { tokenHash: hashToken(refreshToken), userId, familyId, expiresAt }
    // Whole seconds, rounded down: a cookie never outlives its token.
    return { refreshToken, record, maxAge: Math.floor((expiresAt.getTime() - now.getTime()) / 1000) }
  }

  async function findLiveFamilyToken (tokenHash: string, now: Date): Promise<FoundRefreshToken> {
    const record = await store.findRefreshToken(tokenHash)
    if (record === undefined) throw new InvalidRefreshTokenError()
    // Read with the token (no extra query); before the revoked check: disabling revoked the token too, and this says why.
    if (record.userDisabledAt !== null) throw new AccountDisabledError()
    if (record.revokedAt !== null || record.expiresAt <= now) throw new InvalidRefreshTokenError()
    return record
  }

  /** The `org` claim of a membership the user holds now, with its current role; undefined when it holds none. */
  async function organisationClaim (userId: number, orgId: number): Promise<ActiveOrganisationClaim | undefined> {
    const membership = await memberships.membershipOf(orgId, userId)
    return membership === undefined ? undefined : { id: membership.orgId, slug: membership.slug, role: membership.role }
  }

  /**
   * At refresh, the session's active organisation as the membership stands now, read by the store with the refresh
   * token (no read of its own; the request path never reads it: the claim rides in the token). A membership gone
   * (removed, left, the organisation deleted) clears it, so a later membership does not bring it back unasked.
   */
  async function activeOrganisation (sessionId: string, read: Pick<FoundRefreshToken, 'activeOrgId' | 'activeMembership'>): Promise<ActiveOrganisationClaim | undefined> {
    if (read.activeOrgId === null) return undefined
    if (read.activeMembership === null) {
      await store.setActiveOrganisation(sessionId, null)
      return undefined
    }
    return { id: read.activeOrgId, slug: read.activeMembership.slug, role: read.activeMembership.role }
  }

  const sessionEnd = (record: FoundRefreshToken) => (record.sessionStartedAt ?? record.createdAt).getTime() + maxAgeMs

  const sessions: Sessions = {
    async start (userId, client, { methods, authenticatedAt }) {
      const sessionId = randomUUID()
      const now = currentDate(clock)
      const { refreshToken, record, maxAge } = newTokenRecord(userId, sessionId, now, now.getTime() + maxAgeMs)
      const amr = storedMethods(methods)
      await store.startSession({ id: sessionId, userId, userAgent: client.userAgent, ip: client.ip, authenticatedAt, amr }, record, now)
      const status = statusList.claim(await assignRandomStatusIndex(store, sessionId))
      return { userId, sessionId, refreshToken, refreshTokenMaxAge: maxAge, accessToken: accessTokens.sign({ userId, sessionId, status }) }
    },

    async refresh (refreshToken, { rotate, expectedUserId }, client) {
      const now = currentDate(clock)
      const previousHash = hashToken(refreshToken)
      if (rotate) {
        // The common case in one statement (issue 23): the store claims the live token and stores its
        // successor, checking everything the read below would. Only a token it will not rotate is read.
        const successor = newRandomToken()
        const rotated = await store.rotateRefreshToken({
          previousHash, successorHash: hashToken(successor), now, refreshTokenTtlMs: refreshTtlMs, sessionMaxAgeMs: maxAgeMs, expectedUserId
        })
        if (rotated !== undefined) {
          const { userId, familyId: sessionId, statusIndex, expiresAt } = rotated
          if (touches.due(sessionId, now.getTime())) await store.touchSession(sessionId, now)
          const status = statusIndex === null ? undefined : statusList.claim(statusIndex)
          const org = await activeOrganisation(sessionId, rotated)
          // Whole seconds, rounded down: a cookie never outlives its token.
          const refreshTokenMaxAge = Math.floor((expiresAt.getTime() - now.getTime()) / 1000)
          return { userId, sessionId, accessToken: accessTokens.sign({ userId, sessionId, status, org }), refreshToken: successor, refreshTokenMaxAge }
        }
      }

      // No rotation (the header variant), or a token the store would not rotate: read it, and say why.
      const record = await findLiveFamilyToken(previousHash, now)
      if (expectedUserId !== undefined && record.userId !== expectedUserId) throw new TokenMismatchError()
      if (sessionEnd(record) <= now.getTime()) throw new SessionExpiredError()

      const { userId, familyId: sessionId } = record
      if (touches.due(sessionId, now.getTime())) await store.touchSession(sessionId, now)
      const status = record.statusIndex === null ? undefined : statusList.claim(record.statusIndex)
      const org = await activeOrganisation(sessionId, record)
      const issued = { userId, sessionId, accessToken: accessTokens.sign({ userId, sessionId, status, org }) }
      if (record.rotatedAt !== null) {
        if (now.getTime() - record.rotatedAt.getTime() < reuseGraceMs) return issued
        await store.revokeFamily(sessionId, now)
        await securityEvents.record('refresh_token_reused', client, { userId, sessionId })
        throw new RefreshTokenReusedError()
      }
      if (!rotate) return issued
      // Live as read, yet not rotated: the rules the store applies and the ones above disagree.
      throw new Error(`refresh token of session ${sessionId} is live but the store did not rotate it`)
    },

    async renew (claims, refreshToken, client) {
      if (refreshToken !== undefined) {
        const record = await store.findRefreshToken(hashToken(refreshToken))
        if (record?.familyId === claims.sessionId) return await sessions.refresh(refreshToken, { rotate: true, expectedUserId: claims.userId }, client)
      }
      return { userId: claims.userId, sessionId: claims.sessionId, accessToken: accessTokens.sign(claims) }
    },

    async end (refreshToken, client) {
      const record = await store.findRefreshToken(hashToken(refreshToken))
      if (record === undefined || record.revokedAt !== null) return
      await store.revokeFamily(record.familyId, currentDate(clock))
      await securityEvents.record('session_revoked', client, { userId: record.userId, sessionId: record.familyId, detail: { reason: 'logout' } })
    },

    async endOne (userId, sessionId, client) {
      const session = await store.findSession(sessionId)
      // Another user's session is as unknown as one that never was.
      if (session === undefined || session.userId !== userId) throw new SessionNotFoundError()
      await store.revokeFamily(session.id, currentDate(clock))
      await securityEvents.record('session_revoked', client, { userId, sessionId, detail: { reason: 'ended by the user' } })
    },

    async endAll (userId, client, { exceptSessionId } = {}) {
      const ended = await store.revokeUserSessions(userId, currentDate(clock), { exceptFamilyId: exceptSessionId })
      if (ended > 0) await securityEvents.record('session_revoked', client, { userId, detail: { reason: 'all sessions ended', sessions: ended } })
      return ended
    },

    async requireFresh (sessionId) {
      const provedAt = await sessions.authenticatedAt(sessionId)
      if (clock.now() - provedAt.getTime() > reauthMaxAgeMs) throw new ReauthenticationRequiredError()
    },

    async markAuthenticated (sessionId, methods) {
      // Added, never replaced: a step-up with a passkey stays a second factor used when the password is confirmed later.
      const session = await store.findSession(sessionId)
      const amr = storedMethods([...methodsOf(session?.amr ?? ''), ...methods])
      await store.markSessionAuthenticated(sessionId, currentDate(clock), amr)
    },

    async proof (sessionId) {
      const session = await store.findSession(sessionId)
      if (session === undefined) throw new SessionRevokedError()
      return { authenticatedAt: session.authenticatedAt, methods: methodsOf(session.amr) as AuthenticationMethod[] }
    },

    authenticatedAt: async (sessionId) => (await sessions.proof(sessionId)).authenticatedAt,

    async requireSecondFactor (sessionId) {
      const session = await store.findSession(sessionId)
      if (session === undefined) throw new SessionRevokedError()
      if (!usedSecondFactor(session.amr)) throw new SecondFactorRequiredError()
    },

    async activateOrganisation (claims, orgId) {
      // The access token is enough (no fresh session): the membership read is the only check, and a non-member learns nothing.
      const org = await organisationClaim(claims.userId, orgId)
      if (org === undefined) throw new OrgNotFoundError()
      await store.setActiveOrganisation(claims.sessionId, orgId)
      return { userId: claims.userId, sessionId: claims.sessionId, accessToken: accessTokens.sign({ ...claims, org }) }
    },

    async deactivateOrganisation (claims) {
      await store.setActiveOrganisation(claims.sessionId, null)
      return { userId: claims.userId, sessionId: claims.sessionId, accessToken: accessTokens.sign({ ...claims, org: undefined }) }
    }
  }
  return sessions
}

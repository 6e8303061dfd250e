import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import type { RefreshTokenRecord } from '../../db/store.js'
import { InvalidRefreshTokenError, RefreshTokenReusedError, TokenMismatchError } from '../../src/errors.js'
import { hashRefreshToken, newRefreshToken } from '../../src/tokens/refresh-token.js'

declare module 'fastify' {
  interface FastifyInstance {
    sessions: Sessions
  }
}

/** The tokens a login or refresh hands out. refreshToken is absent when the refresh token was not replaced. */
export interface IssuedTokens {
  userId: number
  sessionId: string
  accessToken: string
  refreshToken?: string
}

export interface RefreshOptions {
  /** Replace the refresh token (cookie variant) or keep it until it expires (header variant). */
  rotate: boolean
  /** Refuse (TOKEN_MISMATCH) unless the refresh token belongs to this user. */
  expectedUserId?: number
}

/** Where a session was started from, shown by GET /auth/sessions. */
export interface SessionClient {
  userAgent: string | null
  ip: string | null
}

export interface Sessions {
  start (userId: number, client?: SessionClient): Promise<Required<IssuedTokens>>
  /** Throws INVALID_REFRESH_TOKEN, REFRESH_TOKEN_REUSED or TOKEN_MISMATCH (all 401). */
  refresh (refreshToken: string, options: RefreshOptions): Promise<IssuedTokens>
  /** Revokes the session the refresh token belongs to; an unknown or revoked token changes nothing. */
  end (refreshToken: string): Promise<void>
  /** Revokes every session of the user (logout everywhere, email change); returns how many were live. */
  endAll (userId: number): Promise<number>
}

export interface SessionsOptions {
  refreshTokenTtlSeconds: number
  refreshReuseGraceSeconds: number
}

/**
 * Sessions are refresh-token families. A login starts one; each rotation adds
 * the successor token and marks its predecessor rotated. Presenting a rotated
 * token within the grace period (tabs refreshing at once) still gets an access
 * token; after it, the presenter is assumed to hold a stolen copy and the whole
 * family is revoked (RFC 9700, section 4.14).
 */
export default fp<SessionsOptions>(async (fastify, options) => {
  const { store, accessTokens } = fastify
  const refreshTtlMs = options.refreshTokenTtlSeconds * 1000
  const reuseGraceMs = options.refreshReuseGraceSeconds * 1000

  function newTokenRecord (userId: number, familyId: string, now: Date) {
    const refreshToken = newRefreshToken()
    const record = { tokenHash: hashRefreshToken(refreshToken), userId, familyId, expiresAt: new Date(now.getTime() + refreshTtlMs) }
    return { refreshToken, record }
  }

  async function findLiveFamilyToken (refreshToken: string, now: Date): Promise<RefreshTokenRecord> {
    const record = await store.findRefreshToken(hashRefreshToken(refreshToken))
    if (record === undefined || record.revokedAt !== null || record.expiresAt <= now) throw new InvalidRefreshTokenError()
    return record
  }

  const sessions: Sessions = {
    async start (userId, client = { userAgent: null, ip: null }) {
      const sessionId = randomUUID()
      const now = new Date()
      const { refreshToken, record } = newTokenRecord(userId, sessionId, now)
      await store.createSession({ id: sessionId, userId, ...client }, now)
      await store.createRefreshToken(record)
      return { userId, sessionId, refreshToken, accessToken: accessTokens.sign({ userId, sessionId }) }
    },

    async refresh (refreshToken, { rotate, expectedUserId }) {
      const now = new Date()
      const record = await findLiveFamilyToken(refreshToken, now)
      if (expectedUserId !== undefined && record.userId !== expectedUserId) throw new TokenMismatchError()

      const { userId, familyId: sessionId } = record
      await store.touchSession(sessionId, now)
      const issued = { userId, sessionId, accessToken: accessTokens.sign({ userId, sessionId }) }
      if (record.rotatedAt !== null) {
        if (now.getTime() - record.rotatedAt.getTime() < reuseGraceMs) return issued
        await store.revokeFamily(sessionId, now)
        throw new RefreshTokenReusedError()
      }
      if (!rotate) return issued

      const successor = newTokenRecord(userId, sessionId, now)
      if (await store.rotateRefreshToken(record.tokenHash, successor.record, now)) {
        return { ...issued, refreshToken: successor.refreshToken }
      }
      // Another request rotated (or revoked) this token between our read and our write: judge it again as it is now.
      return await sessions.refresh(refreshToken, { rotate, expectedUserId })
    },

    async end (refreshToken) {
      const record = await store.findRefreshToken(hashRefreshToken(refreshToken))
      if (record !== undefined) await store.revokeFamily(record.familyId, new Date())
    },

    async endAll (userId) {
      return await store.revokeUserSessions(userId, new Date())
    }
  }
  fastify.decorate('sessions', sessions)
}, { name: 'sessions', dependencies: ['store', 'tokens'] })

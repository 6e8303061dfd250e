import { and, eq, gt, isNull, type AnyColumn, type SQL } from 'drizzle-orm'

/** The refresh_tokens columns that say whether a token still stands, alike in both dialects' schemas. */
interface TokenColumns { familyId: AnyColumn, revokedAt: AnyColumn, expiresAt: AnyColumn }

/**
 * A refresh token of the family `familyId` (a column, to correlate, or a value) that is neither revoked
 * nor expired at `now`: a session is live while one of its tokens is (SessionsStore.listLiveSessions).
 */
export function liveTokenOf (refreshTokens: TokenColumns, familyId: AnyColumn | string, now: Date): SQL | undefined {
  return and(
    eq(refreshTokens.familyId, familyId),
    isNull(refreshTokens.revokedAt),
    gt(refreshTokens.expiresAt, now)
  )
}

import { and, eq, gt, isNull, type AnyColumn, type SQL, type SQLWrapper } from 'drizzle-orm'

/** The refresh_tokens columns that say whether a token still stands, alike in both dialects' schemas. */
interface TokenColumns { familyId: AnyColumn, revokedAt: AnyColumn, expiresAt: AnyColumn }

/**
 * A refresh token of the family `familyId` (a column, to correlate, a value, or a prepared statement's
 * placeholder) that is neither revoked nor expired at `now` (a value or a placeholder): a session is live
 * while one of its tokens is (SessionsStore.listLiveSessions, sessionState). The one definition both
 * backends' queries use, their prepared statements too.
 */
export function liveTokenOf (refreshTokens: TokenColumns, familyId: AnyColumn | SQLWrapper | string, now: Date | SQLWrapper): SQL | undefined {
  return and(eq(refreshTokens.familyId, familyId), tokenStands(refreshTokens, now))
}

/** The token of the row at hand is neither revoked nor expired at `now`: liveTokenOf without its family. */
export function tokenStands (refreshTokens: Omit<TokenColumns, 'familyId'>, now: Date | SQLWrapper): SQL | undefined {
  return and(isNull(refreshTokens.revokedAt), gt(refreshTokens.expiresAt, now))
}

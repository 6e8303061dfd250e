import { and, eq, getTableColumns, type AnyColumn, type SQL, type SQLWrapper, type Table } from 'drizzle-orm'
import { activeMembershipOf } from './active-membership.js'
import type { FoundRefreshToken } from './store.js'

/** The tables a refresh token's read joins, and the columns it reads of them, alike in both dialects' schemas. */
export interface RefreshTokenReadTables {
  refreshTokens: Table & { tokenHash: AnyColumn, userId: AnyColumn, familyId: AnyColumn }
  users: Table & { id: AnyColumn, disabledAt: AnyColumn }
  sessions: Table & { id: AnyColumn, createdAt: AnyColumn, activeOrgId: AnyColumn }
  sessionStatusIndexes: Table & { sessionId: AnyColumn, statusIndex: AnyColumn }
  memberships: Table & { orgId: AnyColumn, userId: AnyColumn, role: AnyColumn }
  organizations: Table & { id: AnyColumn, slug: AnyColumn }
}

/**
 * What the read of a refresh token by its hash selects (SessionsStore.findRefreshToken): the token, with its
 * session's login time, which bounds how long the session may be refreshed (SESSION_MAX_AGE), its status-list
 * index, whether its user is disabled, and the session's active organisation with the user's membership of it.
 */
export function refreshTokenReadColumns<T extends RefreshTokenReadTables> (t: T) {
  return {
    ...getTableColumns(t.refreshTokens) as T['refreshTokens']['_']['columns'],
    sessionStartedAt: t.sessions.createdAt as T['sessions']['createdAt'],
    statusIndex: t.sessionStatusIndexes.statusIndex as T['sessionStatusIndexes']['statusIndex'],
    userDisabledAt: t.users.disabledAt as T['users']['disabledAt'],
    activeOrgId: t.sessions.activeOrgId as T['sessions']['activeOrgId'],
    activeOrgSlug: t.organizations.slug as T['organizations']['slug'],
    activeOrgRole: t.memberships.role as T['memberships']['role']
  }
}

/** What refreshTokenRead asks of a dialect's dynamic select: joins and a condition, each answering the select itself. */
interface JoinableRead {
  innerJoin (table: Table, on: SQL | undefined): JoinableRead
  leftJoin (table: Table, on: SQL | undefined): JoinableRead
  where (where: SQL | undefined): JoinableRead
}

/**
 * The joins and the condition of the read of the refresh token whose hash is `tokenHash` (a value or a prepared
 * statement's placeholder): the one definition both backends' prepared statements use, each adding only its own
 * select of refreshTokenReadColumns from refresh_tokens, made dynamic ($dynamic()), and its prepare. A dynamic
 * select is the same select after each join and condition (hence the one type in and out), and keeps its
 * selection's types: the columns of the left joins read as never null, and foundRefreshToken takes the row as it is.
 */
export function refreshTokenRead<Q extends object> (query: Q, t: RefreshTokenReadTables, tokenHash: SQLWrapper | string): Q {
  return (query as unknown as JoinableRead)
    .innerJoin(t.users, eq(t.users.id, t.refreshTokens.userId))
    .leftJoin(t.sessions, eq(t.sessions.id, t.refreshTokens.familyId))
    .leftJoin(t.sessionStatusIndexes, eq(t.sessionStatusIndexes.sessionId, t.refreshTokens.familyId))
    // The active organisation's membership as it stands: the refresh's `org` claim without a read of its own.
    .leftJoin(t.memberships, and(eq(t.memberships.orgId, t.sessions.activeOrgId), eq(t.memberships.userId, t.refreshTokens.userId)))
    .leftJoin(t.organizations, eq(t.organizations.id, t.memberships.orgId))
    .where(eq(t.refreshTokens.tokenHash, tokenHash)) as unknown as Q
}

/** A row of refreshTokenRead as the store answers it: the active membership null unless it holds. */
export function foundRefreshToken (row: Omit<FoundRefreshToken, 'activeMembership'> & { activeOrgSlug: string | null, activeOrgRole: string | null }): FoundRefreshToken {
  const { activeOrgSlug, activeOrgRole, ...token } = row
  return { ...token, activeMembership: activeMembershipOf({ activeOrgSlug, activeOrgRole }) }
}

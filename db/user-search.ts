import { and, gt, or, sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { UserSearch } from './store.js'

/** The users table's columns an admin search reads, alike in both dialects' schemas. */
interface SearchedColumns { id: AnyColumn, email: AnyColumn, firstName: AnyColumn, lastName: AnyColumn, username: AnyColumn }

/** The LIKE pattern of an admin search: the query anywhere, lower-cased, its own % _ and \ taken literally (ESCAPE '\'). */
export function containsPattern (query: string): string {
  return `%${query.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`
}

/**
 * The WHERE of an admin search (UsersStore.searchUsers), one for both dialects: the users after
 * `afterId` whose email or a name holds the query (every user where the query is empty).
 */
export function userSearchCondition (users: SearchedColumns, { query, afterId }: Pick<UserSearch, 'query' | 'afterId'>): SQL | undefined {
  const pattern = query === undefined || query === '' ? undefined : containsPattern(query)
  const matches = pattern === undefined
    ? undefined
    : or(...[users.email, users.firstName, users.lastName, users.username].map((column) => sql`lower(${column}) like ${pattern} escape '\\'`))
  return and(gt(users.id, afterId ?? 0), matches)
}

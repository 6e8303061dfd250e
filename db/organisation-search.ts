import { and, gt, or, sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { OrganisationSearch } from './store.js'
import { containsPattern } from './user-search.js'

/** The organizations table's columns an admin search reads, alike in both dialects' schemas. */
interface SearchedColumns { id: AnyColumn, name: AnyColumn, slug: AnyColumn }

/**
 * The WHERE of an admin search (OrganisationsStore.searchOrganisations), one for both dialects: the organisations
 * after `afterId` whose name or slug holds the query, ignoring case (every one where the query is empty).
 */
export function organisationSearchCondition (organizations: SearchedColumns, { query, afterId }: Pick<OrganisationSearch, 'query' | 'afterId'>): SQL | undefined {
  const pattern = query === undefined || query === '' ? undefined : containsPattern(query)
  const matches = pattern === undefined
    ? undefined
    : or(...[organizations.name, organizations.slug].map((column) => sql`lower(${column}) like ${pattern} escape '\\'`))
  return and(gt(organizations.id, afterId ?? 0), matches)
}

import type { AccountStore, MemberRecord, OrganisationSummary } from '../../db/store.js'
import { OrgNotFoundError } from '../errors.js'

/** What operators read of organisations (GET /admin/orgs, the console's organisation pages): never a change. */
export interface AdminOrganisations {
  /** A page of the search, and the last id of it when another page follows (the users' cursor idiom). */
  search (search: { query?: string, limit: number, afterId?: number }): Promise<{ orgs: OrganisationSummary[], nextAfterId: number | null }>
  /** One organisation with its members; 404 ORG_NOT_FOUND. */
  details (orgId: number): Promise<{ org: OrganisationSummary, members: MemberRecord[] }>
}

export function createAdminOrganisations (store: Pick<AccountStore, 'searchOrganisations' | 'findOrganisation' | 'listMembers'>): AdminOrganisations {
  return {
    async search ({ query, limit, afterId }) {
      // One more than asked: whether another page follows, without a count.
      const found = await store.searchOrganisations({ query, limit: limit + 1, afterId })
      const orgs = found.slice(0, limit)
      return { orgs, nextAfterId: found.length > limit ? orgs[orgs.length - 1].id : null }
    },

    async details (orgId) {
      const [org, members] = await Promise.all([store.findOrganisation(orgId), store.listMembers(orgId)])
      if (org === undefined) throw new OrgNotFoundError()
      return { org: { ...org, memberCount: members.length }, members }
    }
  }
}

import type { AccountStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { AppAccess } from '../schemas/apps.js'
import { grantSessionId, type GrantSessions } from './grant-sessions.js'

export interface Apps {
  /** The apps with access to the user's account: a live grant each, newest use first. */
  list (userId: number): Promise<AppAccess[]>
  /** Ends every grant of the user to the client (its tokens stop, the status list marks them); false when it had none. */
  revoke (userId: number, clientId: string, client: Client): Promise<boolean>
}

export interface AppsDependencies {
  store: Pick<AccountStore, 'listOAuthModels' | 'findOAuthModel' | 'findSession'>
  grantSessions: Pick<GrantSessions, 'isLive'>
  /** Ends a grant: its session, refresh tokens and codes (core/oauth/provider.ts). */
  revokeGrant (grantId: string): Promise<void>
  securityEvents: Pick<SecurityEvents, 'record'>
  clock: Clock
}

/** The account side of the provider: which apps a user let in (GET /auth/apps, the console), and taking that back. */
export function createApps ({ store, grantSessions, revokeGrant, securityEvents, clock }: AppsDependencies): Apps {
  async function liveGrants (userId: number) {
    const grants = await store.listOAuthModels('Grant', currentDate(clock), { accountId: String(userId) })
    const live = []
    for (const grant of grants) {
      if (await grantSessions.isLive(grant.id)) live.push(grant)
    }
    return live
  }

  return {
    async list (userId) {
      const byClient = new Map<string, AppAccess>()
      for (const grant of await liveGrants(userId)) {
        const clientId = String(grant.payload.clientId)
        const session = await store.findSession(grantSessionId(grant.id))
        const scopes = String((grant.payload.openid as { scope?: string } | undefined)?.scope ?? '').split(' ').filter(scope => scope !== '')
        const known = byClient.get(clientId)
        if (known !== undefined) {
          known.scopes = [...new Set([...known.scopes, ...scopes])]
          if (session !== undefined && session.lastUsedAt > known.lastUsedAt) known.lastUsedAt = session.lastUsedAt
          continue
        }
        const clientModel = await store.findOAuthModel('Client', clientId, currentDate(clock))
        byClient.set(clientId, {
          clientId,
          name: String(clientModel?.payload.client_name ?? clientId),
          scopes,
          grantedAt: session?.createdAt ?? currentDate(clock),
          lastUsedAt: session?.lastUsedAt ?? session?.createdAt ?? currentDate(clock)
        })
      }
      return [...byClient.values()].sort((a, b) => b.lastUsedAt.getTime() - a.lastUsedAt.getTime())
    },

    async revoke (userId, clientId, client) {
      const grants = (await liveGrants(userId)).filter(grant => grant.payload.clientId === clientId)
      for (const grant of grants) await revokeGrant(grant.id)
      if (grants.length === 0) return false
      await securityEvents.record('oauth_consent_revoked', client, { userId, detail: { client_id: clientId } })
      return true
    }
  }
}

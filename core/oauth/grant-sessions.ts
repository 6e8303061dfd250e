import type { AccountStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Revocations } from '../revocations/revocations.js'
import { assignRandomStatusIndex } from '../revocations/status-list.js'
import { hashToken, newRandomToken } from '../tokens/random-token.js'

/**
 * An app's grant (a user's consent to a client) is one of the user's sessions: it ends wherever a
 * session ends (sign-out everywhere, a password change or reset, deletion; an operator revoking
 * sessions), every instance learns of it through the revocation log, and its Token Status List
 * index marks the app's access tokens revoked. The session's id is `oauth.<grant id>`; it has one
 * refresh token of ours that nobody ever holds (its hash of 256 random bits), which keeps it live
 * until the grant expires, as a login's token keeps a login's session.
 */
export interface GrantSessions {
  /** Starts the grant's session and gives it a status index; resolves to the index (the adapter keeps it with the grant). */
  start (grant: { grantId: string, accountId: string, clientId: string, expiresAt: Date }): Promise<number>
  /** Whether the grant's session still holds: false once revoked or ended with its user (the in-memory revocation set). */
  isLive (grantId: string): Promise<boolean>
  /** Ends the grant's session: its bit is set in the status list, its refresh tokens stop. */
  revoke (grantId: string): Promise<void>
  /** Sets the session's last use (a token issued to the app). */
  touch (grantId: string): Promise<void>
}

/** The prefix of a grant's session id; GET /auth/sessions leaves these out (they are listed as apps). */
export const GRANT_SESSION_PREFIX = 'oauth.'

export const grantSessionId = (grantId: string) => `${GRANT_SESSION_PREFIX}${grantId}`

export function isGrantSession (sessionId: string): boolean {
  return sessionId.startsWith(GRANT_SESSION_PREFIX)
}

export interface GrantSessionsDependencies {
  store: Pick<AccountStore, 'startSession' | 'claimStatusIndex' | 'highestStatusIndex' | 'revokeFamily' | 'touchSession'>
  revocations: Pick<Revocations, 'sessionState'>
  clock: Clock
}

export function createGrantSessions ({ store, revocations, clock }: GrantSessionsDependencies): GrantSessions {
  return {
    async start ({ grantId, accountId, clientId, expiresAt }) {
      const id = grantSessionId(grantId)
      const userId = Number(accountId)
      if (!Number.isSafeInteger(userId)) throw new Error(`a grant for account ${accountId}, not a user id`)
      await store.startSession({ id, userId, userAgent: `app ${clientId}`, ip: null, login: false },
        { tokenHash: hashToken(newRandomToken()), userId, familyId: id, expiresAt }, currentDate(clock))
      return await assignRandomStatusIndex(store, id)
    },
    async isLive (grantId) {
      return await revocations.sessionState(grantSessionId(grantId), currentDate(clock)) === 'live'
    },
    async revoke (grantId) {
      await store.revokeFamily(grantSessionId(grantId), currentDate(clock))
    },
    async touch (grantId) {
      await store.touchSession(grantSessionId(grantId), currentDate(clock))
    }
  }
}

import type { AccountStore, SessionRecord } from '../../db/store.js'
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
  /**
   * Whether the grant's session still holds: false once revoked or ended with its user. The in-memory
   * revocation set answers, and the store is asked at most every VERIFIED_FOR_MS per grant: the set
   * forgets a revocation after ACCESS_TOKEN_TTL, and an app's refresh token outlives that.
   */
  isLive (grantId: string): Promise<boolean>
  /** isLive where memory alone says "live" (the set holds no revocation, the store said live within VERIFIED_FOR_MS); else undefined. */
  knownLive (grantId: string): true | undefined
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

/** A grant's session names its app where a login's names the browser: `app <client id>` (the console shows it). */
const APP_AGENT_PREFIX = 'app '

/** The client of a grant's session (kept after the grant itself is deleted); undefined for any other session. */
export function clientOfGrantSession (session: Pick<SessionRecord, 'id' | 'userAgent'>): string | undefined {
  if (!isGrantSession(session.id) || session.userAgent?.startsWith(APP_AGENT_PREFIX) !== true) return undefined
  return session.userAgent.slice(APP_AGENT_PREFIX.length)
}

/**
 * How long the store's word that a grant's session is live stands while the revocation set holds no
 * revocation of it. The set keeps each revocation for ACCESS_TOKEN_TTL and 5 s and then reads "live"
 * (issue 33): a revocation made after a read younger than this is sure to be in the set.
 */
export const VERIFIED_FOR_MS = 5000

export interface GrantSessionsDependencies {
  store: Pick<AccountStore, 'startSession' | 'claimStatusIndex' | 'highestStatusIndex' | 'revokeFamily' | 'touchSession'>
  revocations: Pick<Revocations, 'sessionState' | 'storedSessionState' | 'knownSessionState'>
  clock: Clock
}

export function createGrantSessions ({ store, revocations, clock }: GrantSessionsDependencies): GrantSessions {
  const verifiedAt = new Map<string, number>()

  return {
    async start ({ grantId, accountId, clientId, expiresAt }) {
      const id = grantSessionId(grantId)
      const userId = Number(accountId)
      if (!Number.isSafeInteger(userId)) throw new Error(`a grant for account ${accountId}, not a user id`)
      await store.startSession({ id, userId, userAgent: `${APP_AGENT_PREFIX}${clientId}`, ip: null, login: false },
        { tokenHash: hashToken(newRandomToken()), userId, familyId: id, expiresAt }, currentDate(clock))
      return await assignRandomStatusIndex(store, id)
    },
    async isLive (grantId) {
      const id = grantSessionId(grantId)
      const now = currentDate(clock)
      if (await revocations.sessionState(id, now) !== 'live') return false
      const verified = verifiedAt.get(id)
      if (verified !== undefined && now.getTime() - verified < VERIFIED_FOR_MS) return true
      const live = await revocations.storedSessionState(id, now) === 'live'
      // Grants are few next to requests; a bound keeps a long-lived process from holding every grant ever.
      if (verifiedAt.size >= 100_000) verifiedAt.clear()
      if (live) verifiedAt.set(id, now.getTime())
      else verifiedAt.delete(id)
      return live
    },
    knownLive (grantId) {
      const id = grantSessionId(grantId)
      const verified = verifiedAt.get(id)
      if (verified === undefined || clock.now() - verified >= VERIFIED_FOR_MS) return undefined
      return revocations.knownSessionState(id) === 'live' ? true : undefined
    },
    async revoke (grantId) {
      await store.revokeFamily(grantSessionId(grantId), currentDate(clock))
    },
    async touch (grantId) {
      await store.touchSession(grantSessionId(grantId), currentDate(clock))
    }
  }
}

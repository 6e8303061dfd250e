import { randomInt } from 'node:crypto'
import type { AccountStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import { CLIENT_TOKEN_LIST, STATUS_LIST_SIZE } from '../revocations/status-list.js'
import type { StatusClaim } from '../revocations/status-lists.js'

/*
 * A client-credentials token has no user, so no grant and no session whose status index it could carry
 * (core/oauth/grant-sessions.ts). Each one gets a status index of its own instead, drawn at random in the
 * status list kept for these tokens (CLIENT_TOKEN_LIST), held by a stored row (kind ClientTokenStatus,
 * id the index) while the token lives and its bit may be set. Revoking it (RFC 7009, or removing its
 * client) marks the row and writes a revocation-log row with the index: every instance sets the bit, as
 * for a revoked session, and introspection reads the row.
 */

export const CLIENT_TOKEN_STATUS_KIND = 'ClientTokenStatus'

/**
 * How long an index stays held after its token expires: a bit set by a revocation stays in every
 * instance's revocation set for ACCESS_TOKEN_TTL (and a few seconds) after it, so the index is handed
 * out again only once no list sets its bit.
 */
const HELD_AFTER_EXPIRY_MS = 60_000
const MAX_DRAWS = 16

/** The most claims one transaction takes: a burst larger than this is claimed in several, one after the other. */
const MAX_CLAIMS_PER_TRANSACTION = 500

export interface ClientTokenStatus {
  /** The status index of a new client-credentials token of `clientId`, `jti`, which expires at `expiresAt`. */
  issue (token: { clientId: string, jti: string, expiresAt: Date }): Promise<number>
  /** Whether the token of this status claim and jti is not revoked. */
  isLive (token: { jti: string, status: StatusClaim }): Promise<boolean>
  /** Revokes the token: its bit is set on every instance, introspection calls it inactive. */
  revoke (token: { jti: string, status: StatusClaim }): Promise<void>
}

type Store = Pick<AccountStore, 'claimOAuthModels' | 'findOAuthModel' | 'upsertOAuthModel' | 'revokeStatusIndex' | 'listOAuthModels'>

/** The revocation log's name of a client-credentials token (its session id column). */
const logNameOf = (jti: string) => `client-token.${jti}`

/** The status index a claim of CLIENT_TOKEN_LIST names; undefined for any other list. */
function indexOfClaim ({ status_list: { idx, uri } }: StatusClaim): number | undefined {
  const list = Number(uri.slice(uri.lastIndexOf('/') + 1))
  return list === CLIENT_TOKEN_LIST && Number.isInteger(idx) ? (list - 1) * STATUS_LIST_SIZE + idx : undefined
}

type RevokingStore = Pick<AccountStore, 'upsertOAuthModel' | 'revokeStatusIndex' | 'listOAuthModels'>

/** Marks the token's row revoked and logs its index (on the store as given: the CLI's raw one, or the service's following one). */
async function revokeRow (store: RevokingStore, statusIndex: number, row: { payload: Record<string, unknown>, expiresAt: Date | null }, now: Date): Promise<void> {
  if (row.payload.revoked === true) return
  await store.upsertOAuthModel(CLIENT_TOKEN_STATUS_KIND, String(statusIndex), { ...row.payload, revoked: true }, row.expiresAt)
  await store.revokeStatusIndex(logNameOf(String(row.payload.jti)), statusIndex, now)
}

/** A token waiting for its status index: what its row holds, and how many indexes it has drawn. */
interface PendingIssue {
  payload: { clientId: string, jti: string }
  heldUntil: Date
  draws: number
  resolve: (statusIndex: number) => void
  reject: (error: unknown) => void
}

/** A random index of CLIENT_TOKEN_LIST, none of `taken`. */
function drawIndex (taken: Set<number>): number {
  for (;;) {
    const statusIndex = (CLIENT_TOKEN_LIST - 1) * STATUS_LIST_SIZE + randomInt(STATUS_LIST_SIZE)
    if (!taken.has(statusIndex)) return statusIndex
  }
}

export function createClientTokenStatus ({ store, clock }: { store: Store, clock: Clock }): ClientTokenStatus {
  const pending: PendingIssue[] = []
  /** Whether claimPending is under way: a token issued meanwhile joins its next transaction. */
  let claiming = false

  /**
   * Group commit, as refresh rotations are (db/sqlite/sessions.ts): the tokens issued in one turn of the event
   * loop claim their indexes in one store transaction, where a commit per token was most of its row's cost. An
   * index another token holds (a collision, anywhere) is drawn again, in the next transaction, up to MAX_DRAWS
   * times. Every token is answered after its claim's commit, so its index is as durable as before.
   */
  async function claimPending (): Promise<void> {
    claiming = true
    while (pending.length > 0) {
      const batch = pending.splice(0, MAX_CLAIMS_PER_TRANSACTION)
      const taken = new Set<number>()
      const indexes = batch.map((issue) => {
        const statusIndex = drawIndex(taken)
        taken.add(statusIndex)
        issue.draws++
        return statusIndex
      })
      let claimed: boolean[]
      try {
        const claims = batch.map(({ payload, heldUntil }, at) => ({ id: String(indexes[at]), payload, expiresAt: heldUntil }))
        claimed = await store.claimOAuthModels(CLIENT_TOKEN_STATUS_KIND, claims, currentDate(clock))
      } catch (error) {
        for (const issue of batch) issue.reject(error)
        continue
      }
      batch.forEach((issue, at) => {
        if (claimed[at]) issue.resolve(indexes[at])
        else if (issue.draws < MAX_DRAWS) pending.push(issue)
        else issue.reject(new Error(`no free client-token status index after ${MAX_DRAWS} draws`))
      })
    }
    claiming = false
  }

  async function rowOf (token: { jti: string, status: StatusClaim }) {
    const statusIndex = indexOfClaim(token.status)
    if (statusIndex === undefined) return undefined
    const row = await store.findOAuthModel(CLIENT_TOKEN_STATUS_KIND, String(statusIndex), currentDate(clock))
    return row?.payload.jti === token.jti ? { statusIndex, row } : undefined
  }

  return {
    async issue ({ clientId, jti, expiresAt }) {
      const heldUntil = new Date(expiresAt.getTime() + HELD_AFTER_EXPIRY_MS)
      return await new Promise<number>((resolve, reject) => {
        if (pending.push({ payload: { clientId, jti }, heldUntil, draws: 0, resolve, reject }) === 1 && !claiming) {
          // claimPending answers every failure to its tokens: it never rejects.
          setImmediate(() => { claimPending().catch(() => {}) })
        }
      })
    },
    async isLive (token) {
      const found = await rowOf(token)
      return found !== undefined && found.row.payload.revoked !== true
    },
    async revoke (token) {
      const found = await rowOf(token)
      if (found !== undefined) await revokeRow(store, found.statusIndex, found.row, currentDate(clock))
    }
  }
}

/** Revokes every live client-credentials token of the client (its removal, core/oauth/client-removal.ts). */
export async function revokeClientTokensOf (store: RevokingStore, clientId: string, now: Date): Promise<void> {
  for (const row of await store.listOAuthModels(CLIENT_TOKEN_STATUS_KIND, now)) {
    if (row.payload.clientId === clientId) await revokeRow(store, Number(row.id), row, now)
  }
}

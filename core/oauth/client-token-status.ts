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

export interface ClientTokenStatus {
  /** The status index of a new client-credentials token of `clientId`, `jti`, which expires at `expiresAt`. */
  issue (token: { clientId: string, jti: string, expiresAt: Date }): Promise<number>
  /** Whether the token of this status claim and jti is not revoked. */
  isLive (token: { jti: string, status: StatusClaim }): Promise<boolean>
  /** Revokes the token: its bit is set on every instance, introspection calls it inactive. */
  revoke (token: { jti: string, status: StatusClaim }): Promise<void>
}

type Store = Pick<AccountStore, 'claimOAuthModel' | 'findOAuthModel' | 'upsertOAuthModel' | 'revokeStatusIndex' | 'listOAuthModels'>

/** The revocation log's name of a client-credentials token (its session id column). */
const logNameOf = (jti: string) => `client-token.${jti}`

/** The status index a claim of CLIENT_TOKEN_LIST names; undefined for any other list. */
function indexOfClaim ({ status_list: { idx, uri } }: StatusClaim): number | undefined {
  const list = Number(uri.slice(uri.lastIndexOf('/') + 1))
  return list === CLIENT_TOKEN_LIST && Number.isInteger(idx) ? (list - 1) * STATUS_LIST_SIZE + idx : undefined
}

/** Marks the token's row revoked and logs its index (on the store as given: the CLI's raw one, or the service's following one). */
async function revokeRow (store: Store, statusIndex: number, row: { payload: Record<string, unknown>, expiresAt: Date | null }, now: Date): Promise<void> {
  if (row.payload.revoked === true) return
  await store.upsertOAuthModel(CLIENT_TOKEN_STATUS_KIND, String(statusIndex), { ...row.payload, revoked: true }, row.expiresAt)
  await store.revokeStatusIndex(logNameOf(String(row.payload.jti)), statusIndex, now)
}

export function createClientTokenStatus ({ store, clock }: { store: Store, clock: Clock }): ClientTokenStatus {
  async function rowOf (token: { jti: string, status: StatusClaim }) {
    const statusIndex = indexOfClaim(token.status)
    if (statusIndex === undefined) return undefined
    const row = await store.findOAuthModel(CLIENT_TOKEN_STATUS_KIND, String(statusIndex), currentDate(clock))
    return row?.payload.jti === token.jti ? { statusIndex, row } : undefined
  }

  return {
    async issue ({ clientId, jti, expiresAt }) {
      const heldUntil = new Date(expiresAt.getTime() + HELD_AFTER_EXPIRY_MS)
      for (let draw = 0; draw < MAX_DRAWS; draw++) {
        const statusIndex = (CLIENT_TOKEN_LIST - 1) * STATUS_LIST_SIZE + randomInt(STATUS_LIST_SIZE)
        if (await store.claimOAuthModel(CLIENT_TOKEN_STATUS_KIND, String(statusIndex), { clientId, jti }, heldUntil, currentDate(clock))) return statusIndex
      }
      throw new Error(`no free client-token status index after ${MAX_DRAWS} draws`)
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
export async function revokeClientTokensOf (store: Store, clientId: string, now: Date): Promise<void> {
  for (const row of await store.listOAuthModels(CLIENT_TOKEN_STATUS_KIND, now)) {
    if (row.payload.clientId === clientId) await revokeRow(store, Number(row.id), row, now)
  }
}

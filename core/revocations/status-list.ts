import { randomInt } from 'node:crypto'
import { deflateSync } from 'node:zlib'
import type { AccountStore } from '../../db/store.js'

/** Sessions per list (IETF draft-ietf-oauth-status-list): 2^20 bits, 128 KiB before compression. */
export const STATUS_LIST_SIZE = 2 ** 20
/** The highest list number: session status indexes are 32-bit integers. */
export const STATUS_LIST_MAX = Math.ceil(2 ** 31 / STATUS_LIST_SIZE)
/**
 * The last list is client-credentials tokens' (core/oauth/client-token-status.ts), which have no session:
 * sessions draw from the lists below it, so the two never share a bit.
 */
export const CLIENT_TOKEN_LIST = STATUS_LIST_MAX
const SESSION_LISTS_MAX = CLIENT_TOKEN_LIST - 1
/**
 * Taken indexes drawn in a row before the draws take in one more list: a new session widens the
 * range when its lists are about half full (at half full 1 session in 16 does, at a quarter 1 in 256).
 */
export const DRAWS_BEFORE_GROWING = 4
/** Draws before giving up (2^31 indexes would all be taken): an error, never a loop. */
const MAX_DRAWS = 64

/** Draws an integer in [0, below): crypto random (node:crypto randomInt) unless a test gives its own. */
export type Draw = (below: number) => number

/**
 * Gives a new session a random, unused status index (issue 21: a counter let anyone holding a token
 * count the sessions begun since, and read its neighbours' bits as theirs). The IETF Token Status
 * List draft recommends random indexes. Indexes are drawn from the lists in use (list 1 at first,
 * 2^20 indexes; the list of the highest index held tells how many), again on a taken one, and after
 * DRAWS_BEFORE_GROWING taken draws in a row from one more list: the range grows with the sessions,
 * list by list, up to the list below CLIENT_TOKEN_LIST. An index is taken while a session holds it or a revoked
 * session's row in the revocation log names it (its bit is still set); it is free again after that.
 */
export async function assignRandomStatusIndex (store: Pick<AccountStore, 'claimStatusIndex' | 'highestStatusIndex'>, sessionId: string,
  draw: Draw = below => randomInt(below)): Promise<number> {
  const highest = await store.highestStatusIndex()
  let lists = highest === null ? 1 : Math.min(statusListPosition(highest).list, SESSION_LISTS_MAX)
  for (let attempt = 1; attempt <= MAX_DRAWS; attempt++) {
    const statusIndex = draw(lists * STATUS_LIST_SIZE)
    if (await store.claimStatusIndex(sessionId, statusIndex)) return statusIndex
    if (attempt % DRAWS_BEFORE_GROWING === 0) lists = Math.min(lists + 1, SESSION_LISTS_MAX)
  }
  throw new Error(`no free status-list index after ${MAX_DRAWS} draws`)
}

/** Where a session's status index sits: which list (from 1) and which bit of it. */
export function statusListPosition (statusIndex: number): { list: number, idx: number } {
  return { list: Math.floor(statusIndex / STATUS_LIST_SIZE) + 1, idx: statusIndex % STATUS_LIST_SIZE }
}

/**
 * The `lst` of one list: one bit per session, 1 (INVALID) for a revoked one, the least significant
 * bit of each byte first, zlib DEFLATE compressed, base64url.
 */
export function encodeStatusList (list: number, revokedIndexes: Iterable<number | null>): string {
  const bits = Buffer.alloc(STATUS_LIST_SIZE / 8)
  for (const statusIndex of revokedIndexes) {
    if (statusIndex === null) continue
    const position = statusListPosition(statusIndex)
    if (position.list === list) bits[position.idx >> 3] |= 1 << (position.idx & 7)
  }
  return deflateSync(bits).toString('base64url')
}

import { deflateSync } from 'node:zlib'

/** Sessions per list (IETF draft-ietf-oauth-status-list): 2^20 bits, 128 KiB before compression. */
export const STATUS_LIST_SIZE = 2 ** 20
/** The highest list number: session status indexes are 32-bit integers. */
export const STATUS_LIST_MAX = Math.ceil(2 ** 31 / STATUS_LIST_SIZE)

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

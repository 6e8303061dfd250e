import type { Clock } from '../clock.js'
import type { AccessTokens } from '../tokens/access-tokens.js'
import type { Revocations } from './revocations.js'
import { encodeStatusList, statusListPosition } from './status-list.js'

/** The `status` claim of an access token. */
export interface StatusClaim {
  status_list: { idx: number, uri: string }
}

export interface SignedStatusList {
  jwt: string
  etag: string
}

export interface StatusLists {
  /** The claim an access token of the session with this status index carries. */
  claim (statusIndex: number): StatusClaim
  /** List `list` (from 1) as a signed statuslist+jwt, re-signed at most once a second. */
  signed (list: number): SignedStatusList
  readonly ttlSeconds: number
}

export interface StatusListOptions {
  /** PUBLIC_URL without a trailing slash: the lists' uris are absolute. */
  publicUrl: string
  ttlSeconds: number
}

export interface StatusListDependencies {
  revocations: Pick<Revocations, 'set'>
  accessTokens: Pick<AccessTokens, 'signStatusList'>
  clock: Clock
}

/** A list is signed again at most this often, however often revocations come. */
const RESIGN_GAP_MS = 1000
/** A list with no change is still signed again this often, so that its iat stays recent. */
const REFRESH_AFTER_MS = 60_000
/** `exp` of a signed list: a few minutes on, well beyond any STATUS_LIST_TTL a cache should keep it. */
const LIST_LIFETIME_SECONDS = 300

/**
 * The Token Status List (IETF draft-ietf-oauth-status-list, JWT form) of our access tokens, so that
 * a service verifying them with the JWKS learns of a revocation too. The bits come from the
 * revocation set (core/revocations/revocations.ts): a session revoked within the last ACCESS_TOKEN_TTL
 * is INVALID; after that every token of it has expired anyway. Signed lists are cached per list and
 * signed again on the first request after a change, at most once a second.
 */
export function createStatusLists ({ revocations, accessTokens, clock }: StatusListDependencies, options: StatusListOptions): StatusLists {
  const uriOf = (list: number) => `${options.publicUrl}/statuslists/${list}`
  const cache = new Map<number, SignedStatusList & { version: number, signedAt: number }>()
  let signatures = 0

  function sign (list: number, now: number): SignedStatusList & { version: number, signedAt: number } {
    const version = revocations.set.version
    const iat = Math.floor(now / 1000)
    const revoked = Array.from(revocations.set.values(), session => session.statusIndex)
    const jwt = accessTokens.signStatusList({
      sub: uriOf(list),
      iat,
      exp: iat + LIST_LIFETIME_SECONDS,
      ttl: options.ttlSeconds,
      status_list: { bits: 1, lst: encodeStatusList(list, revoked) }
    })
    signatures += 1
    return { jwt, etag: `"${list}.${now.toString(36)}.${signatures}"`, version, signedAt: now }
  }

  return {
    claim (statusIndex) {
      const { list, idx } = statusListPosition(statusIndex)
      return { status_list: { idx, uri: uriOf(list) } }
    },
    signed (list) {
      const now = clock.now()
      const cached = cache.get(list)
      const stale = cached === undefined || cached.version !== revocations.set.version || now - cached.signedAt >= REFRESH_AFTER_MS
      if (!stale || (cached !== undefined && now - cached.signedAt < RESIGN_GAP_MS)) return cached as SignedStatusList
      const signed = sign(list, now)
      cache.set(list, signed)
      return signed
    },
    ttlSeconds: options.ttlSeconds
  }
}

import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock.js'
import { InvalidTokenError, TokenExpiredError } from '../errors.js'
import type { KeyEntry, KeyRing } from './key-ring.js'

/** A verifier of tokens signed with the key ring's service keys, with a memory of the good ones. */
export interface TokenVerifier<Claims> {
  /**
   * The token's claims; throws TOKEN_EXPIRED or INVALID_TOKEN. `allowExpired` still demands our
   * signature (by any key we ever had) and what `claimsOf` checks.
   */
  verify (token: string, options?: { allowExpired?: boolean }): Promise<Claims>
  /**
   * The claims of a token verified before and not yet expired, from memory; undefined otherwise
   * (verify then says why). The request path's way to skip a promise when it can.
   */
  verifiedBefore (token: string): Claims | undefined
}

/** What every signed token carries that the verifier reads itself: its times. */
interface TimedPayload {
  iat?: unknown
  exp?: unknown
}

export interface TokenVerifierOptions<Payload extends TimedPayload, Claims> {
  keyRing: Pick<KeyRing, 'keyFor' | 'generation'>
  clock: Clock
  /** How many verified tokens to keep (least recently used go first). */
  max: number
  /** The signature, algorithm and claim checks of this kind of token for one key (fast-jwt's, no time). */
  verifierFor (kid: string, entry: KeyEntry): (token: string) => Payload
  /**
   * The claims a caller gets, from a payload with a good signature and numeric iat and exp; throws
   * INVALID_TOKEN where this kind of token demands more (the kind's own claims, an iat not in the future).
   * Frozen before it is kept: the same object answers every later request with this token.
   */
  claimsOf (payload: Payload & { iat: number, exp: number }, now: number): Claims
}

interface VerifiedToken<Claims> {
  /** The whole token: the cache is keyed by its signature alone, and a hit must be this very token. */
  token: string
  claims: Claims
  /** The clock's milliseconds up to which the token is still good: its exp, or its key's retirement if sooner. */
  goodUntil: number
  /** The key ring's generation it was verified in. */
  generation: number
}

/**
 * One verifier for every kind of token the service keys sign (the service's access tokens, the apps'
 * at+jwt: core/tokens/access-tokens.ts): the kid names the key, a retired key's tokens are refused
 * (they have all expired; refusing them also refuses forgeries made with a leaked old key), exp gets
 * no leeway, and a good token is kept until its exp. The audience, where a kind has several, is the
 * caller's check.
 */
export function createTokenVerifier<Payload extends TimedPayload, Claims extends object> (
  options: TokenVerifierOptions<Payload, Claims>
): TokenVerifier<Claims> {
  const { keyRing, clock } = options
  // Keyed by the token's signature part, where fast-jwt's cache took a SHA-256 of the token on every request
  // (issue 23): the last 86 characters of an Ed25519 token (hashing a string costs by its length, and a whole
  // token is 400 to 500), and a hit is compared whole, so another token with a copied signature is never
  // taken for this one. Only a good token is kept, until its exp.
  const verified = new LRUCache<string, VerifiedToken<Claims>>({ max: options.max })

  function verifiedBefore (token: string): Claims | undefined {
    const signature = signatureOf(token)
    const known = verified.get(signature)
    if (known === undefined || known.token !== token) return undefined
    if (clock.now() <= known.goodUntil && known.generation === keyRing.generation) return known.claims
    verified.delete(signature)
    return undefined
  }

  return {
    verifiedBefore,
    async verify (token, { allowExpired = false } = {}) {
      const known = verifiedBefore(token)
      if (known !== undefined) return known
      const kid = kidOf(token)
      const entry = kid === undefined ? undefined : await keyRing.keyFor(kid)
      const now = clock.now()
      if (kid === undefined || entry === undefined || (!allowExpired && entry.retiresAt <= now)) throw new InvalidTokenError()
      let payload: Payload
      try {
        payload = options.verifierFor(kid, entry)(token)
      } catch {
        throw new InvalidTokenError()
      }
      if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number') throw new InvalidTokenError()
      const expiresAt = payload.exp * 1000
      const claims = Object.freeze(options.claimsOf(payload as Payload & { iat: number, exp: number }, now))
      if (now > expiresAt) {
        if (!allowExpired) throw new TokenExpiredError()
        return claims
      }
      verified.set(signatureOf(token), { token, claims, goodUntil: Math.min(expiresAt, entry.retiresAt - 1), generation: keyRing.generation })
      return claims
    }
  }
}

function signatureOf (token: string): string {
  return token.slice(token.lastIndexOf('.') + 1)
}

/** The kid of a JWT's header; undefined when the token is not a JWT or names no kid. */
function kidOf (token: string): string | undefined {
  const dot = token.indexOf('.')
  if (dot <= 0) return undefined
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString()) as { kid?: unknown }
    return typeof header.kid === 'string' && header.kid !== '' ? header.kid : undefined
  } catch {
    return undefined
  }
}

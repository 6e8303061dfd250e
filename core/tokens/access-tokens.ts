import { createVerifier } from 'fast-jwt'
import { LRUCache } from 'lru-cache'
import { nowSeconds } from '../clock.js'
import { InvalidTokenError, TokenExpiredError } from '../errors.js'
import { CLOCK_LEEWAY_MS, createKeyRing, type AccessTokenPayload, type KeyRingDependencies, type KeyRingOptions, type ProviderKeys } from './key-ring.js'
import type { PublicKeyDescription } from './keys.js'

/** What a verified access token says: whose it is and which session issued it. */
export interface AccessTokenClaims {
  userId: number
  sessionId: string
  /** The Token Status List claim (core/revocations/status-lists.ts), carried as signed so a re-signed token keeps it. */
  status?: object
}

export interface AccessTokens {
  /** Signs with the newest key; `status` is the Token Status List claim (core/revocations/status-lists.ts). */
  sign (claims: AccessTokenClaims): string
  /** Signs a Token Status List (typ statuslist+jwt) with the newest key; the payload carries its own iat and exp. */
  signStatusList (payload: object): string
  /**
   * Throws TOKEN_EXPIRED or INVALID_TOKEN (401). `allowExpired` still demands
   * our signature (by any key we ever had), issuer and audience.
   */
  verify (token: string, options?: { allowExpired?: boolean }): Promise<AccessTokenClaims>
  /**
   * The claims of a token verified before and not yet expired, from memory; undefined otherwise
   * (verify then says why). The request path's way to skip a promise when it can.
   */
  verifiedBefore (token: string): AccessTokenClaims | undefined
  /**
   * The verifier of the OAuth provider's access tokens for apps (RFC 9068, typ at+jwt), issued by
   * `issuer` (PUBLIC_URL) for it or for a registered resource (RFC 8707: the audience is the caller's
   * check, core/oauth/structured-tokens.ts): the same keys, clock and cache rules as verify, a cache of its own (an
   * app's token never passes as one of the service's, nor the other way round). Made once, by the provider.
   */
  appTokenVerifier (issuer: string): AppTokenVerifier
  /** The JSON Web Key Set that other services verify our tokens with: every key that still verifies. */
  readonly jwks: { keys: Array<PublicKeyDescription['publicJwk']> }
  /** The JWKS as /.well-known/jwks.json serves it: with the ID tokens' RS256 key, made first if need be (core/tokens/key-ring.ts). */
  publishedJwks (): Promise<{ keys: Array<PublicKeyDescription['publicJwk']> }>
  /** The keys the OAuth provider signs and verifies with (core/oauth/provider.ts); the same object until they change. */
  providerKeys (): Promise<ProviderKeys>
  /** Reads the keys from the store again (a key added by another instance or the admin command). */
  reloadKeys (): Promise<void>
}

/** The claims of an app's access token as the provider signs them (core/oauth/provider.ts): RFC 9068's, and ours. */
export interface AppTokenPayload {
  sub: string
  client_id: string
  jti: string
  iat: number
  exp: number
  iss: string
  aud: string | string[]
  scope?: string
  /** The grant of a user's token (none in a client-credentials token). */
  grant_id?: string
  /** The Token Status List claim (core/revocations/status-lists.ts). */
  status?: { status_list: { idx: number, uri: string } }
  /** A sender-constrained token's confirmation (RFC 9449 DPoP: jkt). */
  cnf?: Record<string, unknown>
  [claim: string]: unknown
}

export interface AppTokenVerifier {
  /** The token's claims; throws TOKEN_EXPIRED or INVALID_TOKEN. Whether its grant still holds is the caller's check. */
  verify (token: string): Promise<AppTokenPayload>
  /** The claims of a token verified before and not yet expired, from memory; undefined otherwise (verify says why). */
  verifiedBefore (token: string): AppTokenPayload | undefined
}

/** The settings of the access tokens: the key ring's (core/tokens/key-ring.ts), and how many verified tokens to keep. */
export type TokensOptions = KeyRingOptions & { verifiedTokensMax?: number }

export type AccessTokensDependencies = KeyRingDependencies

/**
 * How many verified tokens are kept (least recently used go first): the tokens of that many
 * sessions active within ACCESS_TOKEN_TTL skip verification. About 0.7 KB each (the token string,
 * its claims): 10,000 is 7 MB.
 */
export const VERIFIED_TOKENS_MAX = 10_000

interface VerifiedToken {
  /** The whole token: the cache is keyed by its signature alone, and a hit must be this very token. */
  token: string
  claims: AccessTokenClaims
  /** The clock's milliseconds up to which the token is still good: its exp, or its key's retirement if sooner. */
  goodUntil: number
  /** The key ring's generation it was verified in. */
  generation: number
}

/**
 * Access tokens: asymmetric JWTs (EdDSA by default) signed and verified with
 * fast-jwt, with a `kid` naming the key published in the JWKS. Verification is
 * pinned to the key's algorithm, our issuer and audience, with no leeway on
 * `exp` and 1 s on `iat`. Keys rotate (core/tokens/key-ring.ts, core/tokens/keys.ts):
 * the newest signs, older ones verify until their last token has expired.
 * `close` stops the key ring's reload timer.
 */
export async function createAccessTokens (deps: AccessTokensDependencies, options: TokensOptions): Promise<AccessTokens & { close (): Promise<void> }> {
  const { clock } = deps
  const keyRing = await createKeyRing(deps, options)
  // Keyed by the token's own text, where fast-jwt's cache took a SHA-256 of the token on every request
  // (issue 23): by its signature part, the last 86 characters of an Ed25519 token (hashing a string
  // costs by its length, and a whole token is 400 to 500), and a hit is compared whole, so another
  // token with a copied signature is never taken for this one. Only a good token is kept, until its exp.
  const verified = new LRUCache<string, VerifiedToken>({ max: options.verifiedTokensMax ?? VERIFIED_TOKENS_MAX })
  const signatureOf = (token: string) => token.slice(token.lastIndexOf('.') + 1)

  function verifiedBefore (token: string): AccessTokenClaims | undefined {
    const signature = signatureOf(token)
    const known = verified.get(signature)
    if (known === undefined || known.token !== token) return undefined
    if (clock.now() <= known.goodUntil && known.generation === keyRing.generation) return known.claims
    verified.delete(signature)
    return undefined
  }

  function appTokenVerifier (issuer: string): AppTokenVerifier {
    const appVerified = new LRUCache<string, { token: string, payload: AppTokenPayload, goodUntil: number, generation: number }>({ max: options.verifiedTokensMax ?? VERIFIED_TOKENS_MAX })
    // One fast-jwt verifier per key, made at its first app token (the provider signs with the ring's newest key).
    const verifiers = new Map<string, (token: string) => AppTokenPayload>()
    function appVerifiedBefore (token: string): AppTokenPayload | undefined {
      const known = appVerified.get(signatureOf(token))
      return known !== undefined && known.token === token && clock.now() <= known.goodUntil && known.generation === keyRing.generation ? known.payload : undefined
    }
    return {
      verifiedBefore: appVerifiedBefore,
      async verify (token) {
        const known = appVerifiedBefore(token)
        if (known !== undefined) return known
        const signature = signatureOf(token)
        const kid = kidOf(token)
        const entry = kid === undefined ? undefined : await keyRing.keyFor(kid)
        const now = clock.now()
        if (kid === undefined || entry === undefined || entry.retiresAt <= now) throw new InvalidTokenError()
        let verify = verifiers.get(kid)
        if (verify === undefined) {
          verify = createVerifier({
            key: entry.key.publicKeyPem,
            algorithms: [entry.key.algorithm],
            allowedIss: issuer,
            checkTyp: 'at+jwt',
            requiredClaims: ['sub', 'client_id', 'jti', 'iat', 'exp', 'iss', 'aud'],
            ignoreExpiration: true,
            clockTolerance: 0
          }) as (token: string) => AppTokenPayload
          verifiers.set(kid, verify)
        }
        let payload: AppTokenPayload
        try {
          payload = verify(token)
        } catch {
          throw new InvalidTokenError()
        }
        if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number' || typeof payload.sub !== 'string' || typeof payload.client_id !== 'string') throw new InvalidTokenError()
        if (now > payload.exp * 1000) throw new TokenExpiredError()
        appVerified.set(signature, { token, payload: Object.freeze(payload), goodUntil: Math.min(payload.exp * 1000, entry.retiresAt - 1), generation: keyRing.generation })
        return payload
      }
    }
  }

  return {
    appTokenVerifier,
    // iat from the app's clock; fast-jwt adds exp = iat + ACCESS_TOKEN_TTL.
    sign: ({ userId, sessionId, status }) => keyRing.signAccessToken({ sub: String(userId), sid: sessionId, status, iat: nowSeconds(clock) }),
    signStatusList: (payload) => keyRing.signStatusList(payload),
    verifiedBefore,
    async verify (token, { allowExpired = false } = {}) {
      const known = verifiedBefore(token)
      if (known !== undefined) return known
      const kid = kidOf(token)
      const entry = kid === undefined ? undefined : await keyRing.keyFor(kid)
      // A retired key's tokens have all expired; refusing it also refuses forgeries made with a leaked old key.
      const now = clock.now()
      if (entry === undefined || (!allowExpired && entry.retiresAt <= now)) throw new InvalidTokenError()
      let payload: AccessTokenPayload
      try {
        payload = entry.verify(token)
      } catch {
        throw new InvalidTokenError()
      }
      // A token issued in the future was not issued by us (RFC 8725, 3.10); fast-jwt checks no iat.
      if (typeof payload.iat !== 'number' || payload.iat * 1000 > now + CLOCK_LEEWAY_MS || typeof payload.exp !== 'number') throw new InvalidTokenError()
      if (!allowExpired && now > payload.exp * 1000) throw new TokenExpiredError()
      const userId = Number(payload.sub)
      if (!/^[1-9][0-9]*$/.test(payload.sub) || !Number.isSafeInteger(userId) || typeof payload.sid !== 'string') {
        throw new InvalidTokenError()
      }
      // Frozen: the same object answers every later request with this token.
      const claims = Object.freeze({ userId, sessionId: payload.sid, status: payload.status })
      if (now <= payload.exp * 1000) verified.set(signatureOf(token), { token, claims, goodUntil: Math.min(payload.exp * 1000, entry.retiresAt - 1), generation: keyRing.generation })
      return claims
    },
    get jwks () {
      return keyRing.jwks
    },
    publishedJwks: () => keyRing.publishedJwks(),
    providerKeys: () => keyRing.providerKeys(),
    reloadKeys: () => keyRing.reload(),
    close: () => keyRing.close()
  }
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

import { createVerifier } from 'fast-jwt'
import { nowSeconds } from '../clock.js'
import { InvalidTokenError } from '../errors.js'
import { CLOCK_LEEWAY_MS, createKeyRing, type AccessTokenPayload, type KeyRingDependencies, type KeyRingOptions, type ProviderKeys } from './key-ring.js'
import type { PublicKeyDescription } from './keys.js'
import type { OrganisationClaim } from '../schemas/active-organisation.js'
import { createTokenVerifier } from './token-verifier.js'

/** The `org` claim: the organisation the user made active in the session, with the role it had at signing. */
export type ActiveOrganisationClaim = OrganisationClaim

/** What a verified access token says: whose it is and which session issued it. */
export interface AccessTokenClaims {
  userId: number
  sessionId: string
  /** The Token Status List claim (core/revocations/status-lists.ts), carried as signed so a re-signed token keeps it. */
  status?: object
  /** The active organisation (POST /orgs/:orgId/activate), as the last refresh found the membership. */
  org?: ActiveOrganisationClaim
}

/** Whether a verified payload's `org` is one we sign: anything else makes the token invalid, not silently org-less. */
function isOrgClaim (org: unknown): org is ActiveOrganisationClaim {
  if (typeof org !== 'object' || org === null) return false
  const { id, slug, role } = org as Record<string, unknown>
  return Number.isSafeInteger(id) && typeof slug === 'string' && typeof role === 'string'
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
  const max = options.verifiedTokensMax ?? VERIFIED_TOKENS_MAX
  const serviceTokens = createTokenVerifier<AccessTokenPayload, AccessTokenClaims>({
    keyRing,
    clock,
    max,
    // The ring's verifier of the key: our issuer and audience.
    verifierFor: (_kid, entry) => entry.verify,
    claimsOf (payload, now) {
      // A token issued in the future was not issued by us (RFC 8725, 3.10); fast-jwt checks no iat.
      if (payload.iat * 1000 > now + CLOCK_LEEWAY_MS) throw new InvalidTokenError()
      const userId = Number(payload.sub)
      if (!/^[1-9][0-9]*$/.test(payload.sub) || !Number.isSafeInteger(userId) || typeof payload.sid !== 'string') {
        throw new InvalidTokenError()
      }
      if (payload.org !== undefined && !isOrgClaim(payload.org)) throw new InvalidTokenError()
      return { userId, sessionId: payload.sid, status: payload.status, org: payload.org }
    }
  })

  function appTokenVerifier (issuer: string): AppTokenVerifier {
    // One fast-jwt verifier per key, made at its first app token (the provider signs with the ring's newest key).
    const verifiers = new Map<string, (token: string) => AppTokenPayload>()
    // A cache of its own: an app's token never passes as one of the service's, nor the other way round.
    const appTokens = createTokenVerifier<AppTokenPayload, AppTokenPayload>({
      keyRing,
      clock,
      max,
      verifierFor (kid, entry) {
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
        return verify
      },
      claimsOf (payload) {
        if (typeof payload.sub !== 'string' || typeof payload.client_id !== 'string') throw new InvalidTokenError()
        return payload
      }
    })
    return { verify: appTokens.verify, verifiedBefore: appTokens.verifiedBefore }
  }

  return {
    appTokenVerifier,
    // iat from the app's clock; fast-jwt adds exp = iat + ACCESS_TOKEN_TTL.
    // The org claim rides in the token so the request path needs no store read for it (undefined is left out of the JSON).
    sign: ({ userId, sessionId, status, org }) => keyRing.signAccessToken({ sub: String(userId), sid: sessionId, status, org, iat: nowSeconds(clock) }),
    signStatusList: (payload) => keyRing.signStatusList(payload),
    verifiedBefore: serviceTokens.verifiedBefore,
    verify: serviceTokens.verify,
    get jwks () {
      return keyRing.jwks
    },
    publishedJwks: () => keyRing.publishedJwks(),
    providerKeys: () => keyRing.providerKeys(),
    reloadKeys: () => keyRing.reload(),
    close: () => keyRing.close()
  }
}

import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto'
import type { ExternalSigningKey } from 'oidc-provider'
import type { SigningJwk } from '../tokens/key-ring.js'

/**
 * The provider's signing key as an oidc-provider ExternalSigningKey (its features.externalSigningSupport),
 * signing with node:crypto's one-shot sign, as the service signs its own tokens (fast-jwt). Given the
 * private JWK, oidc-provider signs through jose, which in Node is WebCrypto: each signature a job queued
 * and awaited, a third of a client-credentials grant's event-loop time (issue 34) for what takes 25-40 µs
 * in place. The key, the JWKS and the signatures are the same (Ed25519 and ES256 are the service's
 * algorithms; an RSA key, slow to sign, is better left to WebCrypto's thread pool and given as a JWK).
 */
export function inPlaceSigningKey (ExternalSigningKeyClass: typeof ExternalSigningKey, jwk: SigningJwk): ExternalSigningKey {
  const privateKey = createPrivateKey({ key: jwk, format: 'jwk' })
  const publicKey = createPublicKey(privateKey)
  // ES256's JWS signature is r || s (RFC 7518 3.4), not node's default DER.
  const signingKey: Parameters<typeof sign>[2] = jwk.alg === 'ES256' ? { key: privateKey, dsaEncoding: 'ieee-p1363' } : privateKey
  const digest = jwk.alg === 'ES256' ? 'sha256' : null

  class InPlaceSigningKey extends ExternalSigningKeyClass {
    constructor () {
      super()
      Object.assign(this, { kid: jwk.kid, alg: jwk.alg })
    }

    keyObject (): KeyObject {
      return publicKey
    }

    sign (data: Uint8Array): Uint8Array {
      return sign(digest, data, signingKey)
    }
  }
  return new InPlaceSigningKey()
}

/** oidc-provider's setting that takes ExternalSigningKey instances (an experimental feature, acknowledged at its version). */
export const EXTERNAL_SIGNING = { enabled: true, ack: 'experimental-01' } as const

import { createPublicKey, type KeyObject } from 'node:crypto'
import type { ExternalSigningKey, JWK } from 'oidc-provider'
import type { ProviderKeys } from '../tokens/key-ring.js'
import { inPlaceSigningKey } from './signing-key.js'

/**
 * oidc-provider's keystore (its `jwks` setting) from the key ring's keys: the two that sign first (of an
 * algorithm, oidc-provider signs with the first key; the service's own key signs in place,
 * core/oauth/signing-key.ts, the RSA key, slow to sign, through WebCrypto's thread pool), then the public halves of older keys still
 * published. oidc-provider verifies an id_token_hint (at logout, with prompt=none) with its keystore, and
 * takes only private JWKs there: an older key, whose private half is deleted at rotation, goes in as an
 * ExternalSigningKey (features.externalSigningSupport) that gives its public key and signs nothing.
 */
export function providerKeystore (ExternalKey: typeof ExternalSigningKey, keys: ProviderKeys): { keys: Array<JWK | ExternalSigningKey> } {
  class RetiredKey extends ExternalKey {
    readonly #kid: string
    readonly #alg: string
    readonly #publicKey: KeyObject

    constructor (jwk: ProviderKeys['retired'][number]) {
      super()
      this.#kid = jwk.kid
      this.#alg = jwk.alg
      this.#publicKey = createPublicKey({ key: jwk, format: 'jwk' })
    }

    override get kid (): string { return this.#kid }
    override get alg (): string { return this.#alg }
    override keyObject (): KeyObject { return this.#publicKey }
    override sign (): never { throw new Error(`the retired signing key ${this.#kid} signs nothing`) }
  }
  return { keys: [keys.rs256 as JWK, inPlaceSigningKey(ExternalKey, keys.service), ...keys.retired.map(jwk => new RetiredKey(jwk))] }
}

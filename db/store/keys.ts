/** EdDSA or ES256: the service's own key; RS256: the ID tokens of the apps that name no other algorithm. */
export type SigningKeyAlgorithm = 'EdDSA' | 'ES256' | 'RS256'

export interface SigningKeyRecord {
  kid: string
  algorithm: SigningKeyAlgorithm
  publicKeyPem: string
  /** Null once the key is retired: only the newest key signs, older ones only verify. */
  privateKeyPem: string | null
  createdAt: Date
}

/** The signing keys, oldest first; the newest of each kind signs (core/tokens/keys.ts). */
export interface SigningKeysStore {
  listSigningKeys (): Promise<SigningKeyRecord[]>
  /**
   * Stores a key; with `onlyIfNoneOf`, only if the store has no key of these algorithms yet (the first
   * key of a kind, made by several instances together: the first stored is the only one).
   */
  addSigningKey (key: SigningKeyRecord, options?: { onlyIfNoneOf?: readonly SigningKeyAlgorithm[] }): Promise<void>
  /**
   * Rewrites a key's private half (sealing one stored in clear) or deletes it (null: a retired key),
   * only while it is still `expected`: false, writing nothing, when another instance changed it first.
   */
  replaceSigningKeyPrivateHalf (kid: string, expected: string, replacement: string | null): Promise<boolean>
}

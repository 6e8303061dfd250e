export interface SigningKeyRecord {
  kid: string
  algorithm: 'EdDSA' | 'ES256'
  publicKeyPem: string
  /** Null once the key is retired: only the newest key signs, older ones only verify. */
  privateKeyPem: string | null
  createdAt: Date
}

/** The signing keys, oldest first; the newest signs. */
export interface SigningKeysStore {
  listSigningKeys (): Promise<SigningKeyRecord[]>
  /** Stores a key; when `onlyIfNone`, only if the store has no key yet (first start of several instances). */
  addSigningKey (key: SigningKeyRecord, options?: { onlyIfNone?: boolean }): Promise<void>
  /**
   * Rewrites a key's private half (sealing one stored in clear) or deletes it (null: a retired key),
   * only while it is still `expected`: false, writing nothing, when another instance changed it first.
   */
  replaceSigningKeyPrivateHalf (kid: string, expected: string, replacement: string | null): Promise<boolean>
}

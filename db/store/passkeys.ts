/** A passkey (WebAuthn credential) of a user. */
export interface PasskeyRecord {
  /** Ours: what the API shows and takes (a UUID). */
  id: string
  userId: number
  /** The authenticator's credential id, base64url. */
  credentialId: string
  /** The COSE public key, base64url. */
  publicKey: string
  /** The signature counter last seen; 0 for authenticators that keep none. */
  counter: number
  /** Transport hints (internal, hybrid, usb, ...), as the browser reported them. */
  transports: string[]
  name: string
  createdAt: Date
  lastUsedAt: Date | null
}

export type NewPasskey = Omit<PasskeyRecord, 'createdAt' | 'lastUsedAt'>

export type WebauthnChallengePurpose = 'registration' | 'authentication'

/** A WebAuthn challenge handed out and not yet answered, stored only as its SHA-256 hash. */
export interface NewWebauthnChallenge {
  challengeHash: string
  purpose: WebauthnChallengePurpose
  /** The user a registration challenge was issued to; null for a login challenge. */
  userId: number | null
  expiresAt: Date
}

/** Passkeys (WebAuthn credentials) and the one-time challenges of their ceremonies. */
export interface PasskeysStore {
  /** Stores a passkey; false, storing nothing, when its credential id is already stored (for anyone). */
  createPasskey (passkey: NewPasskey, now: Date): Promise<boolean>
  /** The user's passkeys, oldest first (GET /auth/account's `mfa.passkeys` is whether there is any). */
  listPasskeys (userId: number): Promise<PasskeyRecord[]>
  findPasskeyByCredentialId (credentialId: string): Promise<PasskeyRecord | undefined>
  /** Renames one of the user's passkeys; undefined when it is not one of theirs. */
  renamePasskey (userId: number, id: string, name: string): Promise<PasskeyRecord | undefined>
  /** Deletes one of the user's passkeys; false when it is not one of theirs. */
  deletePasskey (userId: number, id: string): Promise<boolean>
  /**
   * Records a login with the passkey: stores the new signature counter and the time, only if the
   * counter grew (or both it and the stored one are 0: an authenticator without a counter). False,
   * writing nothing, when it did not: a counter that goes back (or races a higher one) is refused.
   */
  recordPasskeyUse (id: string, counter: number, now: Date): Promise<boolean>
  /** Stores a challenge; expired challenges are deleted in the same transaction (the table holds minutes of them). */
  createWebauthnChallenge (challenge: NewWebauthnChallenge, now: Date): Promise<void>
  /**
   * Uses a challenge up: deletes it and answers true only when it is stored for `purpose`, not
   * expired at `now`, and (when `userId` is given) was issued to that user. Of two requests with
   * one challenge, one gets true.
   */
  consumeWebauthnChallenge (challengeHash: string, purpose: WebauthnChallengePurpose, now: Date, userId?: number): Promise<boolean>
}

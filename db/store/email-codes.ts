import type { MailMessage } from './outbox.js'

/** A mailed sign-in code (POST /auth/email-code), stored as a keyed hash of the code and its address. */
export interface EmailCodeRecord {
  id: number
  /** The address it was mailed to: a code proves that address, whoever's account it is (or none). */
  email: string
  codeHash: string
  createdAt: Date
  expiresAt: Date
  /** When it was used, or voided by a newer code. */
  usedAt: Date | null
  /** Guesses reserved against it (the right one included); at the cap it is burnt. */
  attempts: number
}

export type NewEmailCode = Pick<EmailCodeRecord, 'email' | 'codeHash' | 'expiresAt'>

/** At most `max` codes mailed to one address since `since`. */
export interface EmailCodeQuota {
  since: Date
  max: number
}

/** The mailed sign-in codes: one live code per address, a capped number of guesses each. */
export interface EmailCodesStore {
  /**
   * Stores a new code for its address and voids the address's unused older ones, in one transaction; with
   * `mail`, the mail that carries it is written to the outbox in that same transaction. With `quotas`, stores
   * nothing and answers false when the address was sent `max` codes since `since` (checked and written together).
   */
  issueEmailCode (code: NewEmailCode, now: Date, options: { quotas?: EmailCodeQuota[], mail?: MailMessage }): Promise<boolean>
  /**
   * Reserves one guess at the address's live code (unused, unexpired, fewer than `maxAttempts` guesses so far)
   * in one conditional update, and answers the code with its count after the reservation; undefined when there
   * is no live code or its guesses are spent. Racing requests cannot reserve more than `maxAttempts` in all.
   */
  reserveEmailCodeAttempt (email: string, now: Date, maxAttempts: number): Promise<EmailCodeRecord | undefined>
  /** Gives a reserved guess back: the code was right but cannot be used yet (a sign-up that lacks its fields). */
  releaseEmailCodeAttempt (id: number): Promise<void>
  /** Marks the code used, only if it is unused and unexpired: true for the one caller that gets to use it. */
  useEmailCode (id: number, now: Date): Promise<boolean>
  /** Deletes the codes that expired before `before` (pruning); returns how many. */
  deleteExpiredEmailCodes (before: Date): Promise<number>
}

import type { NewIdentity } from './identities.js'
import type { MailMessage } from './outbox.js'
import type { PasskeyRecord } from './passkeys.js'
import type { UserChanges, UserRecord } from './users.js'

/**
 * Someone proved they own a user's address: a verified provider sign-in (with the identity to link),
 * a password reset (with the new password), or the mailed verification link.
 */
export interface AddressProof {
  userId: number
  /** The address proved: nothing is claimed or verified once the user's email is another. */
  email: string
  /** A reset: the new password, stored whatever the address's state, with every one-time token voided and every session ended. */
  passwordHash?: string
  /** A provider sign-in: the identity to link, refused (writing nothing) when the user has another at that provider. */
  identity?: Omit<NewIdentity, 'userId'>
  /**
   * A mailed sign-in code: it proves the address and nothing else, so on a never-verified account the registrant's
   * password goes with the rest of what it set up (and every session ends). A verified account keeps its password.
   */
  clearsPassword?: boolean
  /**
   * An invitation accepted in a signed-in session: the proof came through that session (its user read the mail),
   * so when the claim ends the account's sessions, this one stays.
   */
  keepSessionId?: string
}

/** What a claim of a never-verified account removed (for the security events). */
export interface ClaimedSetup {
  /** The password was cleared (a provider sign-in, a mailed code; a reset replaces it instead). */
  passwordCleared: boolean
  passkeys: Array<Pick<PasskeyRecord, 'id' | 'name'>>
  /** A TOTP secret (confirmed or not), with its recovery codes and pending mfa_tokens. */
  totp: boolean
  /** Providers of the identities removed. */
  identities: string[]
}

export type AddressProofOutcome =
  /** The user has another identity at the provider, or (provider, subject) is another user's: nothing was written. */
  | { outcome: 'identity_conflict' }
  /** The user is gone, or its email is no longer the one proved: nothing was verified or claimed (a reset's password was still stored). */
  | { outcome: 'email_changed', sessionsEnded: number }
  /**
   * The address is verified (and the identity linked). `claimed` is set when it had never been: everything
   * set up before the proof is gone (see proveAddress); and when a provider's link cleared a verified account's password.
   */
  | { outcome: 'proved', claimed?: ClaimedSetup, sessionsEnded: number }

/** The account rules that write across aggregates, each in one transaction: proving an address, a password change, an email change. */
export interface AccountRulesStore {
  /**
   * The owner of the address proved it, in one transaction. When the user's email is `email` and was never
   * verified, whoever registered it may not own it, so the account is claimed: its passkeys, TOTP secret,
   * recovery codes, pending mfa challenges, passkey-registration challenges and identities are deleted, its
   * unused one-time tokens voided and its sessions revoked (the revocation log written); a provider sign-in
   * and a mailed code (`clearsPassword`) also clear the password (a reset stores the new one; the verification
   * link keeps it), and a mailed code always ends the sessions. The email is then
   * verified and the identity linked. An account already verified keeps all of it (a reset never turns a second
   * factor off), except that a provider sign-in linking to one with a password clears the password, deletes its
   * passkeys and ends every session (`claimed` says so): whoever signs in showed the address, not those. A reset
   * always stores its password, voids one-time tokens and revokes every session. The
   * identity check comes before any write: on `identity_conflict` nothing changed.
   */
  proveAddress (proof: AddressProof, now: Date): Promise<AddressProofOutcome>
  /**
   * A password change, in one transaction: the new hash, every mailed one-time token void, every other
   * session of the user revoked (with its revocation-log row, and the user's pending MFA challenges
   * voided, as revokeUserSessions does), and `keepSessionId` marked as just authenticated. A crash can
   * no longer leave the old sessions alive beside the new password. Returns how many sessions ended.
   */
  changePassword (userId: number, passwordHash: string, now: Date, keepSessionId: string): Promise<number>
  /**
   * An email change, in one transaction: the user's fields updated (the address unverified again), every
   * mailed one-time token void, `notice` (the warning to the old address) queued in the outbox, and every
   * session of the user revoked as revokeUserSessions does. The user is undefined, and nothing written,
   * when there is no such user; a taken address throws DuplicateValueError.
   */
  changeEmail (userId: number, changes: UserChanges, now: Date, notice: MailMessage): Promise<{ user?: UserRecord, sessionsEnded: number }>
}

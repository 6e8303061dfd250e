import type { AccountStore, AddressProof, AddressProofOutcome } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Client, SecurityEvents } from '../events/security-events.js'

/**
 * Someone proved they own the user's address: AccountStore.proveAddress, in one transaction, then what it
 * removed as security events. On an account whose address was never verified, whatever the registrant set up
 * (passkeys, TOTP, recovery codes, pending second steps, identities, sessions; with a provider or a mailed code, the password)
 * is gone: pre-hijacking (docs/accounts.md).
 */
export type ProveAddress = (proof: AddressProof, client: Client) => Promise<AddressProofOutcome>

export interface AddressProofDependencies {
  store: Pick<AccountStore, 'proveAddress'>
  clock: Clock
  securityEvents: Pick<SecurityEvents, 'record'>
}

/**
 * The one function every proof of an address calls: the verification link (account.verifyEmail), a password
 * reset's link (account.resetPassword), a provider that verified the address of an existing account
 * (identities' link by email), a mailed sign-in code (./email-code-sign-in.ts: the password goes too), and an organisation's invitation (core/organisations/invitations.ts: the accepting session stays). A proof that marks the flag
 * some other way skips the claim of a never-verified account. Not proofs: an account a provider's verified
 * address creates is born verified (there is nothing to claim), and an operator's import states it.
 */
export function createProveAddress ({ store, clock, securityEvents }: AddressProofDependencies): ProveAddress {
  return async function proveAddress (proof, client) {
    const outcome = await store.proveAddress(proof, currentDate(clock))
    if (outcome.outcome === 'identity_conflict') return outcome
    const { userId } = proof
    if (outcome.sessionsEnded > 0) {
      await securityEvents.record('session_revoked', client, { userId, detail: { reason: 'all sessions ended', sessions: outcome.sessionsEnded } })
    }
    if (outcome.outcome !== 'proved' || outcome.claimed === undefined) return outcome
    // What the registrant of a never-verified address had set up, and the owner's proof removed.
    const reason = 'address_proved'
    for (const passkey of outcome.claimed.passkeys) {
      await securityEvents.record('passkey_removed', client, { userId, detail: { passkey_id: passkey.id, name: passkey.name, reason } })
    }
    if (outcome.claimed.totp) await securityEvents.record('mfa_disabled', client, { userId, detail: { method: 'totp', reason } })
    for (const provider of outcome.claimed.identities) await securityEvents.record('identity_unlinked', client, { userId, detail: { provider, reason } })
    return outcome
  }
}

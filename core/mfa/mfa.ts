import { currentDate, type Clock } from '../clock.js'
import type { AccountStore, MfaAttempt, MfaChallengeRecord, MfaProof, SecondFactorsStore, TotpRecord } from '../../db/store.js'
import { TotpAlreadyEnabledError, TotpNotEnabledError, TotpSetupNotStartedError, InvalidMfaSetupCodeError } from '../errors.js'
import { mfaLockedMail, signInMethodNotice } from '../mails.js'
import { hashRecoveryCode, newRecoveryCodes } from './recovery-codes.js'
import { asTotpCode, matchingStep, newTotpSecret, otpauthUrl } from './totp.js'
import { createSealer, isSealed } from '../secrets/sealing.js'
import { hashToken, newRandomToken } from '../tokens/random-token.js'
import type { Actor } from '../sessions/actor.js'
import type { SecurityEvents } from '../events/security-events.js'
import type { Mailer } from '../mail/mailer.js'
import type { Sessions } from '../sessions/sessions.js'
import type { MfaStatus } from '../schemas/mfa.js'

/** Wrong codes one mfa_token takes before it is void (the account lockout counts them too). */
export const MFA_MAX_FAILURES = 5
/**
 * Wrong codes (TOTP or recovery, over every mfa_token, kept in the store) since the last accepted one,
 * after which the account's second factor refuses every code, the right one included, until a password
 * reset; the owner is mailed when it locks. Only someone who knows the password reaches the code prompt:
 * ten guesses of a 6-digit code (three steps accepted) succeed about once in 33,000 tries of the whole attack.
 */
export const MFA_MAX_WRONG_CODES = 10
/**
 * Wrong codes a password reset gives back to a locked (or nearly locked) second factor: the count drops to
 * MFA_MAX_WRONG_CODES minus this, not to zero, so that whoever controls the mailbox as well as the
 * password gains only this many guesses per reset mail (RESET_MAILS_PER_DAY of them a day at most).
 */
export const MFA_WRONG_CODES_AFTER_RESET = 3

/** How a code tried at the second step of a login ended; `method` says what kind of code it was. */
export type MfaVerdict = MfaAttempt & { method: 'totp' | 'recovery_code' }

/** The account whose login's second step a code is tried for. */
export interface MfaUser {
  id: number
  email: string
}

export interface Mfa {
  /**
   * A new TOTP secret and its otpauth:// URL, inactive until confirmed; it replaces one not yet
   * confirmed. 403 REAUTHENTICATION_REQUIRED past REAUTH_MAX_AGE; 409 TOTP_ALREADY_ENABLED.
   */
  beginTotp (actor: Actor): Promise<{ secret: string, otpauthUrl: string }>
  /**
   * Turns TOTP on with a current code (400 INVALID_MFA_CODE otherwise) and ends every other session of the
   * user; returns the recovery codes, shown once.
   */
  confirmTotp (actor: Actor, code: string): Promise<string[]>
  /** Turns TOTP off, recovery codes with it (fresh session needed). Idempotent. */
  disableTotp (actor: Actor): Promise<void>
  /** A new set of recovery codes, the old one void (fresh session needed); 409 TOTP_NOT_ENABLED without TOTP. */
  renewRecoveryCodes (actor: Actor): Promise<string[]>
  status (userId: number): Promise<MfaStatus>
  /** Whether a login of the user, after the right password, needs a second step. */
  isRequired (userId: number): Promise<boolean>
  /**
   * A new mfa_token for the second step of the user's login (only its hash is stored), valid MFA_TOKEN_TTL.
   * After a provider sign-in or a mailed code (`firstStep`: the provider's name, or the code's mark, see
   * core/authentication/complete-sign-in.ts) it rides in the token, as in the exchange's one-time code; the
   * stored hash covers it, so the login is recorded with the first factor it really had.
   */
  challenge (userId: number, firstStep?: string): Promise<string>
  /** What an mfa_token's first step was (see challenge); undefined after a password. */
  firstStepOf (mfaToken: string): string | undefined
  /** The challenge of an mfa_token while it may still be tried (unused, unexpired, not void); else undefined. */
  openChallenge (mfaToken: string): Promise<MfaChallengeRecord | undefined>
  /**
   * A code of a signed-in user (re-authentication), judged as a login's second step is, through a
   * one-shot challenge: a TOTP step or a recovery code is consumed once, whichever path it is used on.
   */
  confirmCode (user: MfaUser, code: string): Promise<MfaVerdict>
  /**
   * Tries a TOTP or recovery code against the challenge, atomically (see AccountStore.attemptMfaChallenge),
   * under the account's cap of MFA_MAX_WRONG_CODES; the wrong code that reaches it mails the owner.
   */
  attempt (mfaToken: string, user: MfaUser, code: string): Promise<MfaVerdict>
  /** A password reset proved the mailbox: a locked second factor takes MFA_WRONG_CODES_AFTER_RESET more wrong codes. */
  afterPasswordReset (userId: number): Promise<void>
}

export interface MfaOptions {
  /** The issuer an authenticator app shows beside the account (JWT_ISSUER). */
  issuer: string
  mfaTokenTtlSeconds: number
  /** SIGNING_KEY_ENCRYPTION_KEY: TOTP secrets are sealed with it at rest, as the signing keys are. */
  signingKeyEncryptionKey?: Buffer
}

export interface MfaDependencies {
  /** The second factors, and the user's passkeys (status reports whether there is any). */
  store: SecondFactorsStore & Pick<AccountStore, 'listPasskeys'>
  clock: Clock
  sessions: Pick<Sessions, 'requireFresh' | 'requireSecondFactor' | 'endAll'>
  securityEvents: Pick<SecurityEvents, 'record'>
  mailer: Pick<Mailer, 'enqueue' | 'forOutbox' | 'wake'>
}

/** A TOTP secret whose sealed form the configured key cannot open (or there is no key): a 500, logged. */
class TotpSecretUnavailableError extends Error {}

/**
 * The second factor: TOTP (RFC 6238) with single-use recovery codes. Secrets are sealed with
 * SIGNING_KEY_ENCRYPTION_KEY when it is set (core/secrets/sealing.ts, bound to the user id);
 * recovery codes and mfa_tokens are stored only as hashes. The login's second step, under the
 * account lockout, is authentication.completeMfaLogin.
 */
export function createMfa ({ store, clock, sessions, securityEvents, mailer }: MfaDependencies, options: MfaOptions): Mfa {
  const sealer = options.signingKeyEncryptionKey === undefined ? undefined : createSealer(options.signingKeyEncryptionKey)
  const ttlMs = options.mfaTokenTtlSeconds * 1000
  // The owner as associated data: a sealed secret copied onto another user's row does not open.
  const sealedFor = (userId: number) => `totp:${userId}`

  function openSecret (record: TotpRecord): string {
    if (!isSealed(record.secret)) return record.secret
    if (sealer === undefined) throw new TotpSecretUnavailableError(`the TOTP secret of user ${record.userId} is sealed, but SIGNING_KEY_ENCRYPTION_KEY is not set`)
    try {
      return sealer.open(record.secret, sealedFor(record.userId))
    } catch (error) {
      throw new TotpSecretUnavailableError(`SIGNING_KEY_ENCRYPTION_KEY does not open the TOTP secret of user ${record.userId}`, { cause: error })
    }
  }

  /** What a code proves, for the store to consume: a TOTP step in the drift window, or a recovery code; null: nothing. */
  async function proofOf (userId: number, code: string, now: number): Promise<MfaProof | null> {
    if (asTotpCode(code) === undefined) return code.trim() === '' ? null : { recoveryCodeHash: hashRecoveryCode(userId, code) }
    const totp = await store.findTotp(userId)
    if (totp?.confirmedAt == null) return null
    const step = matchingStep(openSecret(totp), code, now)
    return step === undefined ? null : { totpStep: step }
  }

  const isConfirmed = (totp: TotpRecord | undefined) => totp !== undefined && totp.confirmedAt !== null
  const hashesOf = (userId: number, codes: string[]) => codes.map(code => hashRecoveryCode(userId, code))

  const mfa: Mfa = {
    async beginTotp ({ user, sessionId }) {
      await sessions.requireFresh(sessionId)
      // An account with a passkey already has a second factor: a session signed in with the password alone (a thief's)
      // may not add another of its own choosing, which would then pass for the owner's (issue 33, finding 3).
      if ((await store.listPasskeys(user.id)).length > 0) await sessions.requireSecondFactor(sessionId)
      const secret = newTotpSecret()
      const stored = sealer === undefined ? secret : sealer.seal(secret, sealedFor(user.id))
      if (!await store.saveTotpSecret(user.id, stored, currentDate(clock))) throw new TotpAlreadyEnabledError()
      return { secret, otpauthUrl: otpauthUrl(secret, options.issuer, user.email) }
    },

    async confirmTotp ({ user, sessionId, client }, code) {
      const totp = await store.findTotp(user.id)
      if (totp === undefined || totp.confirmedAt !== null) throw new TotpSetupNotStartedError()
      const step = matchingStep(openSecret(totp), code, clock.now())
      if (step === undefined) throw new InvalidMfaSetupCodeError()
      const recoveryCodes = newRecoveryCodes()
      // The confirming code's step counts as used: it cannot also pass a login's second step.
      if (!await store.confirmTotp(user.id, step, hashesOf(user.id, recoveryCodes), currentDate(clock))) throw new TotpSetupNotStartedError()
      await securityEvents.record('mfa_enabled', client, { userId: user.id, sessionId, detail: { method: 'totp' } })
      // A session signed in with the password alone (a thief's, say) would outlive the move to two factors: as after
      // a password change, every other session ends; this one goes on.
      await sessions.endAll(user.id, client, { exceptSessionId: sessionId })
      return recoveryCodes
    },

    async disableTotp ({ user, sessionId, client }) {
      await sessions.requireFresh(sessionId)
      const wasConfirmed = isConfirmed(await store.findTotp(user.id))
      if (await store.deleteTotp(user.id) && wasConfirmed) {
        await securityEvents.record('mfa_disabled', client, { userId: user.id, sessionId, detail: { method: 'totp' } })
        await mailer.enqueue(signInMethodNotice(user.email, { kind: 'totp_disabled' }, currentDate(clock), client))
      }
    },

    async renewRecoveryCodes ({ user, sessionId, client }) {
      await sessions.requireFresh(sessionId)
      const recoveryCodes = newRecoveryCodes()
      if (!await store.replaceRecoveryCodes(user.id, hashesOf(user.id, recoveryCodes), currentDate(clock))) throw new TotpNotEnabledError()
      await securityEvents.record('recovery_codes_renewed', client, { userId: user.id, sessionId })
      return recoveryCodes
    },

    async status (userId) {
      const totp = isConfirmed(await store.findTotp(userId))
      const passkeys = (await store.listPasskeys(userId)).length > 0
      return { totp, passkeys, recoveryCodesLeft: totp ? await store.countRecoveryCodes(userId) : 0 }
    },

    async isRequired (userId) {
      return isConfirmed(await store.findTotp(userId))
    },

    async challenge (userId, firstStep) {
      // Provider names (and the code's mark) have no '.' (OIDC_PROVIDERS), random parts are base64url: the first '.' ends the name.
      const mfaToken = firstStep === undefined ? newRandomToken() : `${firstStep}.${newRandomToken()}`
      const now = currentDate(clock)
      await store.createMfaChallenge({ tokenHash: hashToken(mfaToken), userId, expiresAt: new Date(now.getTime() + ttlMs) }, now, MFA_MAX_FAILURES)
      return mfaToken
    },

    async openChallenge (mfaToken) {
      const challenge = await store.findMfaChallenge(hashToken(mfaToken))
      if (challenge === undefined || challenge.usedAt !== null || challenge.expiresAt.getTime() <= clock.now() || challenge.failures >= MFA_MAX_FAILURES) return undefined
      return challenge
    },

    firstStepOf (mfaToken) {
      const separator = mfaToken.indexOf('.')
      return separator > 0 ? mfaToken.slice(0, separator) : undefined
    },

    async confirmCode (user, code) {
      return await mfa.attempt(await mfa.challenge(user.id), user, code)
    },

    async attempt (mfaToken, user, code) {
      const now = clock.now()
      const proof = await proofOf(user.id, code, now)
      const lockedMail = mailer.forOutbox(mfaLockedMail(user.email, MFA_MAX_WRONG_CODES))
      const attempt = await store.attemptMfaChallenge(hashToken(mfaToken), proof, new Date(now), MFA_MAX_FAILURES, { maxWrongCodes: MFA_MAX_WRONG_CODES, lockedMail })
      if (attempt.outcome === 'refused' && attempt.lockedNow === true) mailer.wake()
      return { ...attempt, method: asTotpCode(code) === undefined ? 'recovery_code' : 'totp' }
    },

    async afterPasswordReset (userId) {
      await store.forgiveMfaFailures(userId, MFA_MAX_WRONG_CODES - MFA_WRONG_CODES_AFTER_RESET)
    }
  }
  return mfa
}

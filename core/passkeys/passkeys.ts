import { randomUUID } from 'node:crypto'
import type {
  AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON, VerifiedRegistrationResponse
} from '@simplewebauthn/server'
import { currentDate, type Clock } from '../clock.js'
import type { PasskeyRecord, PasskeysStore, SecondFactorsStore, UserRecord, UsersStore } from '../../db/store.js'
import type { Authentication } from '../authentication/authentication.js'
import {
  InvalidPasskeyError, InvalidPasskeyRegistrationError, PasskeyAlreadyRegisteredError,
  PasskeyCounterRegressedError, PasskeyNotFoundError
} from '../errors.js'
import { signInMethodNotice } from '../mails.js'
import type { Logger } from '../logger.js'
import type { Client, SecurityEvents } from '../events/security-events.js'
import type { Mailer } from '../mail/mailer.js'
import type { Sessions, StartedSession } from '../sessions/sessions.js'
import { createWebauthnChallenges, PASSKEY_CHALLENGE_TTL_MS } from './challenges.js'

export { PASSKEY_CHALLENGE_TTL_MS } from './challenges.js'

/**
 * @simplewebauthn/server, loaded at the first ceremony: it takes about 25 MB and 0.4 s to load
 * here, which a process that never sees a passkey should not pay at start.
 */
let webauthnLibrary: Promise<typeof import('@simplewebauthn/server')> | undefined
const webauthn = async () => await (webauthnLibrary ??= import('@simplewebauthn/server'))

/** The name a passkey gets when the client gives none. */
export const DEFAULT_PASSKEY_NAME = 'Passkey'

export interface Passkeys {
  /**
   * Options for navigator.credentials.create(): a discoverable credential, the user's passkeys excluded.
   * Needs a fresh session (403 REAUTHENTICATION_REQUIRED past REAUTH_MAX_AGE): a passkey is a way in.
   */
  registrationOptions (user: UserRecord, sessionId: string): Promise<PublicKeyCredentialCreationOptionsJSON>
  /** Verifies the browser's answer to the user's registration challenge and stores the passkey: 400, 409. */
  register (user: UserRecord, response: RegistrationResponseJSON, name: string | undefined, client: Client, sessionId: string): Promise<PasskeyRecord>
  list (userId: number): Promise<PasskeyRecord[]>
  /** 404 PASSKEY_NOT_FOUND unless it is one of the user's. */
  rename (userId: number, id: string, name: string): Promise<PasskeyRecord>
  /** 404 PASSKEY_NOT_FOUND unless it is one of the user's; needs a fresh session (403 REAUTHENTICATION_REQUIRED). */
  remove (userId: number, id: string, client: Client, sessionId: string): Promise<void>
  /** Options for navigator.credentials.get() with no allowCredentials: the authenticator offers the passkeys it holds. */
  authenticationOptions (): Promise<PublicKeyCredentialRequestOptionsJSON>
  /**
   * A passkey with user verification to a new session: 401 INVALID_PASSKEY, 401 PASSKEY_COUNTER_REGRESSED, then
   * authentication.completeSignIn's 403 ACCOUNT_DISABLED and EMAIL_NOT_VERIFIED (with REQUIRE_EMAIL_VERIFICATION).
   */
  logIn (response: AuthenticationResponseJSON, client: Client): Promise<{ user: UserRecord, session: StartedSession }>
  /**
   * A passkey of the signed-in user, with user verification, makes its session fresh (REAUTH_MAX_AGE), as a
   * passkey login would: the same 401 INVALID_PASSKEY (another user's passkey too) and PASSKEY_COUNTER_REGRESSED.
   */
  reauthenticate (user: UserRecord, response: AuthenticationResponseJSON, client: Client, sessionId: string): Promise<void>
}

export interface PasskeysOptions {
  rpId: string
  rpName: string
  /** The origins a ceremony may run on (clientDataJSON.origin). */
  origins: string[]
}

export interface PasskeysDependencies {
  store: PasskeysStore & Pick<UsersStore, 'findUserById'> & Pick<SecondFactorsStore, 'findTotp'>
  clock: Clock
  log: Logger
  sessions: Pick<Sessions, 'markAuthenticated' | 'requireFresh' | 'requireSecondFactor'>
  securityEvents: Pick<SecurityEvents, 'record'>
  /** Where a passkey's sign-in ends, as every sign-in does. */
  authentication: Pick<Authentication, 'completeSignIn'>
  mailer: Pick<Mailer, 'enqueue'>
}

/**
 * The WebAuthn user handle of a user: its id as text. Stable, so an authenticator keeps one
 * credential per account, and checked against the credential's owner at login.
 */
const userHandleOf = (userId: number) => new TextEncoder().encode(String(userId))

/**
 * Passkeys (WebAuthn Level 3 through @simplewebauthn/server). Challenges are 256 random bits,
 * stored as SHA-256 hashes for PASSKEY_CHALLENGE_TTL_MS and consumed by a delete before the answer
 * is judged, so each is good for one try. A registration challenge belongs to the user who asked
 * for it. A login needs user verification (the authenticator's PIN or biometrics): possession and
 * verification make it a whole login, with no second factor after it. The signature counter is
 * judged after the signature: a counter that goes back is refused and recorded. The challenges
 * are ./challenges.ts.
 */
export function createPasskeys (deps: PasskeysDependencies, { rpId, rpName, origins }: PasskeysOptions): Passkeys {
  const { store, clock, log, sessions, securityEvents, authentication, mailer } = deps
  const challenges = createWebauthnChallenges({ store, clock })

  async function ownPasskey (userId: number, id: string): Promise<PasskeyRecord> {
    const passkey = (await store.listPasskeys(userId)).find(candidate => candidate.id === id)
    if (passkey === undefined) throw new PasskeyNotFoundError()
    return passkey
  }

  /**
   * The passkey that signed the answer to an authentication challenge (consumed), with user verification, its counter
   * recorded; 401 INVALID_PASSKEY or PASSKEY_COUNTER_REGRESSED, each failure recorded against the passkey's owner.
   */
  async function verifiedAssertion (response: AuthenticationResponseJSON, client: Client): Promise<PasskeyRecord> {
    const challenge = await challenges.consume(response.response.clientDataJSON, 'authentication')
    if (challenge === undefined) throw new InvalidPasskeyError()
    const passkey = await store.findPasskeyByCredentialId(response.id)
    if (passkey === undefined) throw new InvalidPasskeyError()
    const { userHandle } = response.response
    // The authenticator's account for this credential must be the credential's owner (WebAuthn §7.2 step 6).
    if (typeof userHandle === 'string' && userHandle !== '' && userHandle !== Buffer.from(userHandleOf(passkey.userId)).toString('base64url')) {
      throw new InvalidPasskeyError()
    }
    let verified = false
    let newCounter = 0
    try {
      const verification = await (await webauthn()).verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: origins,
        expectedRPID: rpId,
        // Counter 0 here: the library would judge the counter before the signature; we judge it after (below).
        credential: { id: passkey.credentialId, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: 0, transports: passkey.transports as never },
        requireUserVerification: true
      })
      verified = verification.verified
      newCounter = verification.authenticationInfo.newCounter
    } catch (error) {
      log.info({ err: error, userId: passkey.userId }, 'passkey login not verified')
    }
    if (!verified) {
      await securityEvents.record('login_failed', client, { userId: passkey.userId, detail: { method: 'passkey', passkey_id: passkey.id } })
      throw new InvalidPasskeyError()
    }
    if (!await store.recordPasskeyUse(passkey.id, newCounter, currentDate(clock))) {
      // A signed answer with a counter at or below the stored one: a copy of the authenticator's key is in use.
      await securityEvents.record('passkey_counter_regressed', client, {
        userId: passkey.userId,
        detail: { passkey_id: passkey.id, stored_counter: passkey.counter, presented_counter: newCounter }
      })
      throw new PasskeyCounterRegressedError()
    }
    return passkey
  }

  const passkeys: Passkeys = {
    async registrationOptions (user, sessionId) {
      await sessions.requireFresh(sessionId)
      const existing = await store.listPasskeys(user.id)
      // An account with a second factor: a session signed in with the password alone (a thief's) may not add one of its
      // own choosing, which would then pass for the owner's (issue 33, finding 3). The challenge issued here binds register.
      if (existing.length > 0 || (await store.findTotp(user.id))?.confirmedAt != null) await sessions.requireSecondFactor(sessionId)
      return await (await webauthn()).generateRegistrationOptions({
        rpName,
        rpID: rpId,
        userName: user.email,
        userID: userHandleOf(user.id),
        userDisplayName: `${user.firstName} ${user.lastName}`,
        challenge: await challenges.issue('registration', user.id),
        timeout: PASSKEY_CHALLENGE_TTL_MS,
        attestationType: 'none',
        excludeCredentials: existing.map(passkey => ({ id: passkey.credentialId, transports: passkey.transports })),
        // Required, as at login: a passkey stored without user verification could never sign in, yet would count as a way in.
        authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' }
      })
    },

    async register (user, response, name, client, sessionId) {
      const challenge = await challenges.consume(response.response.clientDataJSON, 'registration', user.id)
      if (challenge === undefined) throw new InvalidPasskeyRegistrationError('The registration challenge is unknown, already used or expired: ask for new registration options')
      let verification: VerifiedRegistrationResponse
      try {
        verification = await (await webauthn()).verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: origins, expectedRPID: rpId, requireUserVerification: true })
      } catch (error) {
        log.info({ err: error, userId: user.id }, 'passkey registration not verified')
        verification = { verified: false }
      }
      if (!verification.verified) throw new InvalidPasskeyRegistrationError('The passkey could not be verified (origin, relying party, user verification or attestation)')
      const { credential } = verification.registrationInfo
      const passkey = {
        id: randomUUID(),
        userId: user.id,
        credentialId: credential.id,
        publicKey: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        transports: response.response.transports ?? [],
        name: name ?? DEFAULT_PASSKEY_NAME
      }
      const now = currentDate(clock)
      if (!await store.createPasskey(passkey, now)) throw new PasskeyAlreadyRegisteredError()
      await securityEvents.record('passkey_added', client, { userId: user.id, sessionId, detail: { passkey_id: passkey.id, name: passkey.name } })
      // In the outbox before the answer: a passkey is a way in, and its owner must hear of one they did not add.
      await mailer.enqueue(signInMethodNotice(user.email, { kind: 'passkey_added', name: passkey.name }, now, client))
      return { ...passkey, createdAt: now, lastUsedAt: null }
    },

    list: (userId) => store.listPasskeys(userId),

    async rename (userId, id, name) {
      const renamed = await store.renamePasskey(userId, id, name)
      if (renamed === undefined) throw new PasskeyNotFoundError()
      return renamed
    },

    async remove (userId, id, client, sessionId) {
      await sessions.requireFresh(sessionId)
      const passkey = await ownPasskey(userId, id)
      if (!await store.deletePasskey(userId, id)) throw new PasskeyNotFoundError()
      await securityEvents.record('passkey_removed', client, { userId, sessionId, detail: { passkey_id: id, name: passkey.name } })
    },

    async authenticationOptions () {
      return await (await webauthn()).generateAuthenticationOptions({
        rpID: rpId,
        challenge: await challenges.issue('authentication', null),
        timeout: PASSKEY_CHALLENGE_TTL_MS,
        userVerification: 'required',
        allowCredentials: []
      })
    },

    async logIn (response, client) {
      const passkey = await verifiedAssertion(response, client)
      const user = await store.findUserById(passkey.userId)
      if (user === undefined) throw new InvalidPasskeyError()
      // With user verification (required above): the passkey is a second factor on its own, so the outcome is a session.
      const { session } = await authentication.completeSignIn({ user, method: { kind: 'passkey', passkeyId: passkey.id }, client })
      return { user, session }
    },

    async reauthenticate (user, response, client, sessionId) {
      const passkey = await verifiedAssertion(response, client)
      if (passkey.userId !== user.id) {
        // A passkey of another account proves nothing about this session's user.
        await securityEvents.record('login_failed', client, { userId: user.id, sessionId, detail: { method: 'passkey', reason: 'another user\'s passkey' } })
        throw new InvalidPasskeyError()
      }
      await sessions.markAuthenticated(sessionId, ['passkey'])
      await securityEvents.record('reauthenticated', client, { userId: user.id, sessionId, detail: { method: 'passkey', passkey_id: passkey.id } })
    }
  }
  return passkeys
}

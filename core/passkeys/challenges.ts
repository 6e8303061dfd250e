import { randomBytes } from 'node:crypto'
import { currentDate, type Clock } from '../clock.js'
import type { PasskeysStore, WebauthnChallengePurpose } from '../../db/store.js'
import { hashToken } from '../tokens/random-token.js'

/** How long a challenge (and so a ceremony in the browser) lasts. */
export const PASSKEY_CHALLENGE_TTL_MS = 5 * 60_000

/**
 * The one-time challenges of the WebAuthn ceremonies: 256 random bits, stored as SHA-256 hashes for
 * PASSKEY_CHALLENGE_TTL_MS and consumed by a delete before the answer is judged, so each is good for
 * one try. A registration challenge belongs to the user who asked for it.
 */
export interface WebauthnChallenges {
  /** A new challenge for the purpose (and, for a registration, the user), stored until PASSKEY_CHALLENGE_TTL_MS from now. */
  issue (purpose: WebauthnChallengePurpose, userId: number | null): Promise<Uint8Array<ArrayBuffer>>
  /** Uses up the challenge the answer was made for and returns it; undefined when it was unknown, used, expired or (registration) another user's. */
  consume (clientDataJSON: string, purpose: WebauthnChallengePurpose, userId?: number): Promise<string | undefined>
}

export interface WebauthnChallengesDependencies {
  store: Pick<PasskeysStore, 'createWebauthnChallenge' | 'consumeWebauthnChallenge'>
  clock: Clock
}

/** The challenge the browser signed, read from clientDataJSON; undefined when that is not JSON with one. */
function challengeIn (clientDataJSON: string): string | undefined {
  try {
    const clientData: unknown = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8'))
    const challenge = (clientData as { challenge?: unknown } | null)?.challenge
    return typeof challenge === 'string' && challenge !== '' ? challenge : undefined
  } catch {
    return undefined
  }
}

export function createWebauthnChallenges ({ store, clock }: WebauthnChallengesDependencies): WebauthnChallenges {
  return {
    async issue (purpose, userId) {
      const challenge = new Uint8Array(randomBytes(32))
      const now = currentDate(clock)
      const challengeHash = hashToken(Buffer.from(challenge).toString('base64url'))
      await store.createWebauthnChallenge({ challengeHash, purpose, userId, expiresAt: new Date(now.getTime() + PASSKEY_CHALLENGE_TTL_MS) }, now)
      return challenge
    },

    async consume (clientDataJSON, purpose, userId) {
      const challenge = challengeIn(clientDataJSON)
      if (challenge === undefined) return undefined
      return await store.consumeWebauthnChallenge(hashToken(challenge), purpose, currentDate(clock), userId) ? challenge : undefined
    }
  }
}

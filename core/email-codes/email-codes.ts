import { createHmac, hkdfSync, randomInt, timingSafeEqual } from 'node:crypto'
import type { AccountStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import { InvalidEmailCodeError } from '../errors.js'
import type { Logger } from '../logger.js'
import type { Mailer } from '../mail/mailer.js'
import { signInCodeMail } from '../mails.js'

/** How long a mailed code may be used. */
export const EMAIL_CODE_TTL_SECONDS = 600
/** Guesses at one code, the right one included: the fifth wrong one burns it. */
export const EMAIL_CODE_MAX_ATTEMPTS = 5
export const EMAIL_CODE_DIGITS = 6
/**
 * Codes one address can be mailed, whoever asks (POST /auth/email-code still answers 202). With five guesses a
 * code, a day's quota gives a guesser 5 × 30 tries at a million codes: 1 in 6,600, before the per-address limit.
 */
export const EMAIL_CODES_PER_HOUR = 10
export const EMAIL_CODES_PER_DAY = 30
/** When a request's work starts after the answer: as forgot-password's (core/accounts/account.ts), so no request is timed against it. */
export const EMAIL_CODE_WORK_DELAY_MIN_MS = 50
export const EMAIL_CODE_WORK_DELAY_SPREAD_MS = 450

const HOUR_MS = 3_600_000

/** A right code, its guess reserved: `use` spends it, `release` gives the guess back (a sign-up not ready yet). */
export interface RightEmailCode {
  id: number
  email: string
}

/**
 * The mailed sign-in codes: six digits, mailed with a link that fills them in, single use, EMAIL_CODE_TTL_SECONDS,
 * the newest only, EMAIL_CODE_MAX_ATTEMPTS guesses. The store keeps an HMAC of the address and the code, never the
 * code. What a right code is worth (a sign-in, a sign-up, a re-authentication) is the caller's.
 */
export interface EmailCodes {
  /**
   * Mails a new code to the address when it has an account, or when `signUp` (EMAIL_CODE_SIGNUP) for any address,
   * within the address's quotas; nothing otherwise. All of it off the request's path, at a random moment after the
   * answer, the same job for every address (the lookup decides), so that neither the answer nor its time tells.
   */
  send (email: string, options: { signUp: boolean }): void
  /**
   * Judges a code for the address against its live code, with one guess reserved first (so a burst cannot judge
   * more than the cap): the right one is returned, not yet spent; a wrong one, or none live, is 401 INVALID_CODE.
   */
  check (email: string, code: string): Promise<RightEmailCode>
  /** Spends a right code: 401 INVALID_CODE when a racing request spent it first (or it expired meanwhile). */
  use (code: RightEmailCode): Promise<void>
  /** Gives a right code's guess back, unspent. */
  release (code: RightEmailCode): Promise<void>
}

export interface EmailCodesDependencies {
  store: Pick<AccountStore, 'findUserByEmail' | 'issueEmailCode' | 'reserveEmailCodeAttempt' | 'releaseEmailCodeAttempt' | 'useEmailCode'>
  clock: Clock
  mailer: Pick<Mailer, 'send' | 'forOutbox'>
  log: Logger
}

export interface EmailCodesOptions {
  /** Where the mailed link leads: PUBLIC_URL. */
  publicUrl: string
  /**
   * SIGNING_KEY_ENCRYPTION_KEY: keys the codes' HMAC, so that a copy of the store cannot try the million codes of a
   * live one. Without it the HMAC is keyed by a constant and the address only: a copy of the store then yields the live codes.
   */
  secretKey?: Buffer
}

/** The link a code's mail carries: the sign-in page of /account, which fills the code (and the address) in from the fragment. */
export function emailCodeLink (publicUrl: string, email: string, code: string): string {
  return `${publicUrl}/account#email_code=${code}&email=${encodeURIComponent(email)}`
}

export function createEmailCodes ({ store, clock, mailer, log }: EmailCodesDependencies, { publicUrl, secretKey }: EmailCodesOptions): EmailCodes {
  // A key of its own, derived: the encryption key itself is never used for anything but sealing.
  const hmacKey = secretKey === undefined
    ? Buffer.from('account-service email codes')
    : Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'account-service email-code hmac', 32))
  const hashOf = (email: string, code: string) => createHmac('sha256', hmacKey).update(`${email}\n${code}`).digest()

  return {
    send (email, { signUp }) {
      // At a random moment after the answer (as forgot-password): a known address's work (the code, the outbox, the
      // delivery) must not slow the requests that follow, or their time would tell whether the address has an account.
      mailer.send(async () => {
        if (!signUp && await store.findUserByEmail(email) === undefined) return
        const code = String(randomInt(0, 10 ** EMAIL_CODE_DIGITS)).padStart(EMAIL_CODE_DIGITS, '0')
        const now = currentDate(clock)
        const mail = signInCodeMail(email, code, emailCodeLink(publicUrl, email, code), EMAIL_CODE_TTL_SECONDS)
        const issued = await store.issueEmailCode({ email, codeHash: hashOf(email, code).toString('base64url'), expiresAt: new Date(now.getTime() + EMAIL_CODE_TTL_SECONDS * 1000) }, now, {
          quotas: [{ since: new Date(now.getTime() - HOUR_MS), max: EMAIL_CODES_PER_HOUR }, { since: new Date(now.getTime() - 24 * HOUR_MS), max: EMAIL_CODES_PER_DAY }],
          mail: mailer.forOutbox(mail)
        })
        if (!issued) log.info('sign-in code not mailed: the address reached its hourly or daily quota')
      }, { delayMs: EMAIL_CODE_WORK_DELAY_MIN_MS + Math.random() * EMAIL_CODE_WORK_DELAY_SPREAD_MS })
    },

    async check (email, code) {
      // The guess is counted before it is judged: of any number of racing requests, at most the cap are judged.
      const live = await store.reserveEmailCodeAttempt(email, currentDate(clock), EMAIL_CODE_MAX_ATTEMPTS)
      // Computed whether or not a code is live: the time of a wrong answer does not tell which. A code copied
      // as "123 456" or "123-456" is the code.
      const given = hashOf(email, code.replace(/[\s-]/g, ''))
      const stored = live === undefined ? undefined : Buffer.from(live.codeHash, 'base64url')
      if (live === undefined || stored === undefined || stored.length !== given.length || !timingSafeEqual(stored, given)) throw new InvalidEmailCodeError()
      return { id: live.id, email: live.email }
    },

    async use ({ id }) {
      if (!await store.useEmailCode(id, currentDate(clock))) throw new InvalidEmailCodeError()
    },

    async release ({ id }) {
      await store.releaseEmailCodeAttempt(id)
    }
  }
}

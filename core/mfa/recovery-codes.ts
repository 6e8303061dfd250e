import { createHash, randomInt } from 'node:crypto'
import { RECOVERY_CODES_PER_SET } from '../schemas/mfa.js'

/** Lower-case RFC 4648 base32: no 0, 1, 8 or 9 to mistake for o, l, b or g when a code is read off paper. */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'
/** 12 characters of 32: 60 random bits each, shown as xxxx-xxxx-xxxx. */
const GROUPS = 3
const GROUP_LENGTH = 4

/** A new set of single-use recovery codes, as the user is shown them (once). */
export function newRecoveryCodes (): string[] {
  return Array.from({ length: RECOVERY_CODES_PER_SET }, () => Array.from({ length: GROUPS }, () =>
    Array.from({ length: GROUP_LENGTH }, () => ALPHABET[randomInt(ALPHABET.length)]).join('')).join('-'))
}

/** A typed code as it was issued: case, hyphens and spaces do not matter. */
function normalize (code: string): string {
  return code.toLowerCase().replace(/[\s-]+/g, '')
}

/**
 * What the store keeps of a recovery code: SHA-256 over the user id and the code, so a copy of the
 * database gives no usable code and no table serves every account. (60 random bits: no slow hash needed.)
 */
export function hashRecoveryCode (userId: number, code: string): string {
  return createHash('sha256').update(`${userId}:${normalize(code)}`).digest('base64url')
}

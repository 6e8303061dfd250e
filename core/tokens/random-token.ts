import { hash, randomFillSync } from 'node:crypto'

const TOKEN_BYTES = 32
/**
 * Random bytes drawn a pool at a time, as Node's randomUUID does: one call to the system's generator
 * per 128 tokens instead of one per token (about 4 µs a call here, a twentieth of a refresh with
 * rotation: issue 23). Each byte goes into one token only, and is zeroed once taken.
 */
const pool = Buffer.alloc(128 * TOKEN_BYTES)
let taken = pool.length

/**
 * 256 random bits, base64url (safe in a link and a header as is): every opaque token the service hands
 * out, the refresh token, the mailed reset and verification tokens, the mfa_token, the provider sign-in's code.
 */
export function newRandomToken (): string {
  if (taken + TOKEN_BYTES > pool.length) {
    randomFillSync(pool)
    taken = 0
  }
  const token = pool.toString('base64url', taken, taken + TOKEN_BYTES)
  pool.fill(0, taken, taken + TOKEN_BYTES)
  taken += TOKEN_BYTES
  return token
}

/**
 * What the store keeps instead of a token: its SHA-256. A copy of the database yields no usable token.
 * crypto.hash, one call, not a Hash object: every token request hashes two or three (issue 34).
 */
export function hashToken (token: string): string {
  return hash('sha256', token, 'base64url')
}

import { createHash, randomBytes } from 'node:crypto'

/**
 * 256 random bits, base64url (safe in a link and a header as is): every opaque token the service hands
 * out, the refresh token, the mailed reset and verification tokens, the mfa_token, the provider sign-in's code.
 */
export function newRandomToken (): string {
  return randomBytes(32).toString('base64url')
}

/** What the store keeps instead of a token: its SHA-256. A copy of the database yields no usable token. */
export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('base64url')
}

import { createHash, randomBytes } from 'node:crypto'

/** 256 random bits, base64url (safe in a link as is): a password-reset or email-verification token. */
export function newOneTimeToken (): string {
  return randomBytes(32).toString('base64url')
}

/** The store keeps only this SHA-256 hash: a copy of the database opens no account. */
export function hashOneTimeToken (token: string): string {
  return createHash('sha256').update(token).digest('base64url')
}

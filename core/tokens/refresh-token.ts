import { createHash, randomBytes } from 'node:crypto'

/** 256 random bits, base64url: the refresh token as the client holds it. */
export function newRefreshToken (): string {
  return randomBytes(32).toString('base64url')
}

/** What the store keeps instead of the token: a stolen database yields no usable token. */
export function hashRefreshToken (refreshToken: string): string {
  return createHash('sha256').update(refreshToken).digest('base64url')
}

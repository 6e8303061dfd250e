import { Secret, TOTP } from 'otpauth'

/*
 * TOTP as RFC 6238 defines it and every authenticator app reads it: HMAC-SHA-1, 6 digits, 30-second
 * steps. A code of the step before or after the server's is accepted too (one step of drift, for a
 * clock a little off and a code typed at the turn of a step); two steps away it is refused.
 */
export const TOTP_PARAMETERS = { algorithm: 'SHA1', digits: 6, period: 30 } as const
/** Steps of drift accepted either side of the server's. */
export const TOTP_WINDOW = 1
/** 160 bits, the HMAC-SHA-1 key length RFC 4226 recommends. */
const SECRET_BYTES = 20

/** A new random secret, base32 (what the authenticator app is given). */
export function newTotpSecret (): string {
  return new Secret({ size: SECRET_BYTES }).base32
}

/** The otpauth:// URL an authenticator app reads from a QR code: issuer, the account's email, the secret. */
export function otpauthUrl (secret: string, issuer: string, email: string): string {
  return new TOTP({ issuer, label: email, secret: Secret.fromBase32(secret), ...TOTP_PARAMETERS }).toString()
}

/** A six-digit code, spaces allowed between digits ("123 456"); anything else is no TOTP code. */
export function asTotpCode (code: string): string | undefined {
  const digits = code.replace(/\s+/g, '')
  return /^\d{6}$/.test(digits) ? digits : undefined
}

/**
 * The time step a code belongs to, within the drift window around `now` (epoch ms), or undefined
 * when it matches none. The caller refuses a step already used (replay).
 */
export function matchingStep (secret: string, code: string, now: number): number | undefined {
  const token = asTotpCode(code)
  if (token === undefined) return undefined
  const delta = TOTP.validate({ token, secret: Secret.fromBase32(secret), ...TOTP_PARAMETERS, timestamp: now, window: TOTP_WINDOW })
  return delta === null ? undefined : TOTP.counter({ period: TOTP_PARAMETERS.period, timestamp: now }) + delta
}

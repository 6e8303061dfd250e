import { Type, type Static } from '@sinclair/typebox'
import { NO_NUL } from './common.js'
import { ErrorResponse } from './errors.js'

// What the MFA rules (core/mfa/) report, defined here with the schemas that show it: the rules sit
// above the schemas and import them, never the other way round.

/** How many recovery codes a set holds. */
export const RECOVERY_CODES_PER_SET = 10

/** What a user's second factors are, as the MFA rules (core/mfa/mfa.ts) report them and the account schemas show them. */
export interface MfaStatus {
  /** TOTP is confirmed: a login asks for a code. */
  totp: boolean
  /** The user has at least one passkey (a whole login of its own, core/passkeys/passkeys.ts). */
  passkeys: boolean
  recoveryCodesLeft: number
}

/** A TOTP code (six digits) or a recovery code; what it is, is told by its form. */
const Code = Type.String({ minLength: 1, maxLength: 64, pattern: NO_NUL, description: 'Six digits from the authenticator app, or a recovery code' })

export const TotpSetupResponse = Type.Object({
  secret: Type.String({ description: 'The TOTP secret, base32: type it into an authenticator app, or draw otpauth_url as a QR code' }),
  otpauth_url: Type.String({ description: 'otpauth://totp/… with the issuer and the account\'s email (SHA-1, 6 digits, 30 s)' })
}, { additionalProperties: false })

export const TotpConfirmBody = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 64, pattern: NO_NUL, description: 'The current six-digit code of the new secret' })
}, { additionalProperties: false })

export const RecoveryCodesResponse = Type.Object({
  recovery_codes: Type.Array(Type.String(), {
    minItems: RECOVERY_CODES_PER_SET,
    maxItems: RECOVERY_CODES_PER_SET,
    description: 'Single-use codes for when the authenticator is lost; shown this once, stored only as hashes'
  })
}, { additionalProperties: false })

export const MfaVerifyBody = Type.Object({
  mfa_token: Type.String({ minLength: 1, maxLength: 256, pattern: NO_NUL, description: 'From the login\'s 403 MFA_REQUIRED answer' }),
  code: Code
}, { additionalProperties: false })

/** A refused login: the one error shape, plus `mfa_token` when the code is MFA_REQUIRED. */
export const LoginRefusedResponse = Type.Object({
  ...ErrorResponse.properties,
  mfa_token: Type.Optional(Type.String({ description: 'Only with MFA_REQUIRED: opaque, single use, valid MFA_TOKEN_TTL; send it to POST /auth/mfa/verify' }))
}, { title: 'Error' })

export const MfaStatusView = Type.Object({
  totp: Type.Boolean({ description: 'TOTP is on: a login asks for a code' }),
  passkeys: Type.Boolean({ description: 'The user has at least one passkey' }),
  recovery_codes_left: Type.Integer({ minimum: 0 })
}, { additionalProperties: false })

export function presentMfaStatus (status: MfaStatus): Static<typeof MfaStatusView> {
  return { totp: status.totp, passkeys: status.passkeys, recovery_codes_left: status.recoveryCodesLeft }
}

// What a user's second factors are, as the MFA rules (core/mfa/mfa.ts) report them and the account schemas show them.

export interface MfaStatus {
  /** TOTP is confirmed: a login asks for a code. */
  totp: boolean
  /** The user has at least one passkey (a whole login of its own, core/passkeys/passkeys.ts). */
  passkeys: boolean
  recoveryCodesLeft: number
}

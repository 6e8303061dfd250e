// What a user's second factors are, as the MFA plugin reports them and the account schemas show them.

export interface MfaStatus {
  /** TOTP is confirmed: a login asks for a code. */
  totp: boolean
  /** The user has at least one passkey (a whole login of its own, plugins/app/passkeys.ts). */
  passkeys: boolean
  recoveryCodesLeft: number
}

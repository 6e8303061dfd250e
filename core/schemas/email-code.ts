import { Type } from '@sinclair/typebox'
import type { Variant } from '../config.js'
import { Email, Name, NO_NUL, Password, Username } from './common.js'

/**
 * A mailed sign-in code as typed or pasted: six digits, spaces and hyphens ignored. Any other text is a wrong
 * code (401 INVALID_CODE, a guess counted), not a malformed body: every wrong answer is the same one.
 */
export const EmailCode = Type.String({ minLength: 1, maxLength: 64, pattern: NO_NUL, description: 'The six-digit code from the mail (spaces and hyphens ignored)' })

export const EmailCodeBody = Type.Object({ email: Email }, { additionalProperties: false })

/** The fields a password-free sign-up adds to a verify, as the variant's registration names them (no password: 400). */
const signUpFields = {
  first_name: Type.Optional(Name),
  last_name: Type.Optional(Name)
}

export const EmailCodeVerifyBody = {
  header: Type.Object({ email: Email, code: EmailCode, ...signUpFields }, { additionalProperties: false }),
  cookie: Type.Object({ email: Email, code: EmailCode, ...signUpFields, username: Type.Optional(Username) }, { additionalProperties: false })
} as const satisfies Record<Variant, unknown>

/** The fields a sign-up needs in each variant, in the order a message names the missing ones. */
export const SIGN_UP_FIELDS: Record<Variant, ReadonlyArray<'first_name' | 'last_name' | 'username'>> = {
  header: ['first_name', 'last_name'],
  cookie: ['first_name', 'last_name', 'username']
}

/** The first password of an account that has none (POST /auth/password). */
export const SetPasswordBody = Type.Object({ password: Password }, { additionalProperties: false })

import { dictionary } from '@zxcvbn-ts/language-common'
import { PasswordTooCommonError, ValidationFailedError } from './errors.js'
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './schemas/common.js'

/**
 * The most common passwords, lower-cased: the 49,233-entry list of
 * @zxcvbn-ts/language-common (MIT), from breach corpora. Only entries that
 * the length rule would let through are kept (about 18,000).
 */
const COMMON_PASSWORDS: ReadonlySet<string> = new Set(
  dictionary['passwords-common']
    .filter(password => [...password].length >= PASSWORD_MIN_LENGTH)
    .map(password => password.toLowerCase())
)

/** How many common passwords are refused (for the docs and the tests). */
export const COMMON_PASSWORD_COUNT = COMMON_PASSWORDS.size

/**
 * Checks a new password (register, change, reset) against NIST SP 800-63B:
 * 8 to 256 characters (code points), no composition rules, and not one of the
 * most common passwords, compared ignoring case. Throws VALIDATION_FAILED or
 * PASSWORD_TOO_COMMON (both 400).
 */
export function assertPasswordAllowed (password: string): void {
  const length = [...password].length
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) {
    throw new ValidationFailedError(`password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`)
  }
  if (COMMON_PASSWORDS.has(password.toLowerCase())) throw new PasswordTooCommonError()
}

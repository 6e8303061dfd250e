import { PasswordTooCommonError, ValidationFailedError } from './errors.js'
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './schemas/common.js'

let commonPasswords: Promise<ReadonlySet<string>> | undefined

/**
 * The most common passwords, lower-cased: the 49,233-entry list of
 * @zxcvbn-ts/language-common (MIT), from breach corpora. Only entries that
 * the length rule would let through are kept (about 18,000). Loaded at the
 * first password set, not at start: the list and its decompression were a
 * tenth of the start (issue 23).
 */
function commonPasswordList (): Promise<ReadonlySet<string>> {
  commonPasswords ??= import('@zxcvbn-ts/language-common').then((language) => {
    // The package is CommonJS: Node gives its exports by name, the start bundle (esbuild) as the default.
    const { dictionary } = language.dictionary === undefined ? (language as unknown as { default: typeof language }).default : language
    return new Set(dictionary['passwords-common']
      .filter(password => [...password].length >= PASSWORD_MIN_LENGTH)
      .map(password => password.toLowerCase()))
  })
  return commonPasswords
}

/** How many common passwords are refused (for the docs and the tests). */
export async function commonPasswordCount (): Promise<number> {
  return (await commonPasswordList()).size
}

/**
 * Checks a new password (register, change, reset) against NIST SP 800-63B:
 * 8 to 256 characters (code points), no composition rules, and not one of the
 * most common passwords, compared ignoring case. Throws VALIDATION_FAILED or
 * PASSWORD_TOO_COMMON (both 400).
 */
export async function assertPasswordAllowed (password: string): Promise<void> {
  const length = [...password].length
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) {
    throw new ValidationFailedError(`password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`)
  }
  if ((await commonPasswordList()).has(password.toLowerCase())) throw new PasswordTooCommonError()
}

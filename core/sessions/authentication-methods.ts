/**
 * How a user proved itself in a session (its `amr`, as OpenID Connect names the claim): a sign-in's
 * methods, and every re-authentication's since. A recovery code stands in for the TOTP code; a passkey is
 * always used with user verification (core/passkeys), so it is a second factor on its own.
 */
export type AuthenticationMethod = 'password' | 'totp' | 'recovery_code' | 'passkey' | 'provider' | 'email_code'

/** The methods that are a second factor: a password, a provider's sign-in or a mailed code alone is one factor. */
const SECOND_FACTORS: ReadonlySet<string> = new Set<AuthenticationMethod>(['totp', 'recovery_code', 'passkey'])

/** The stored form (sessions.amr): the set, space-separated. */
export function storedMethods (methods: Iterable<string>): string {
  return [...new Set(methods)].join(' ')
}

export function methodsOf (stored: string): string[] {
  return stored.split(' ').filter(method => method !== '')
}

/** Whether a session's methods include a second factor. */
export function usedSecondFactor (stored: string): boolean {
  return methodsOf(stored).some(method => SECOND_FACTORS.has(method))
}

/** A username the cookie variant accepts: 3 to 32 of [A-Za-z0-9_.-] (core/schemas/common.ts). */
const USERNAME = /^[A-Za-z0-9_.-]{3,32}$/

/**
 * The username a new account made by a provider sign-in starts with: the provider's
 * `preferred_username` or the email's local part, reduced to the characters a username may hold.
 * `attempt` > 0 adds a random suffix (the name was taken).
 */
export function candidateUsername (preferred: string | undefined, email: string, attempt: number): string {
  const cleaned = (value: string | undefined) => (value ?? '').replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 24)
  let base = cleaned(preferred)
  if (!USERNAME.test(base)) base = cleaned(email.split('@')[0])
  if (base.length < 3) base = `user${base}`
  if (attempt === 0) return base
  return `${base}.${Math.floor(Math.random() * 1_000_000).toString().padStart(6, '0')}`
}

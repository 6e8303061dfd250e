import { createHash, timingSafeEqual } from 'node:crypto'
import { newRandomToken } from '../tokens/random-token.js'

/** RFC 7636's S256: the challenge a verifier answers. */
export function s256 (codeVerifier: string): string {
  return createHash('sha256').update(codeVerifier).digest('base64url')
}

const bindingOf = (random: string, codeChallenge: string) => createHash('sha256').update(`${random}.${codeChallenge}`).digest('base64url')

/**
 * The header variant's one-time #code= of a provider sign-in: `<provider>.<256 random bits>.<binding>`,
 * the binding a hash of the random part and the code_challenge the app sent to the start. The store
 * keeps the hash of the whole code, so no part of it can be altered; the provider's name is there for
 * the login event. Only the app holding the challenge's verifier can show the code is its own
 * (a code planted in another app, login CSRF, is worth nothing there).
 */
export function newLoginCode (provider: string, codeChallenge: string): string {
  const random = newRandomToken()
  return `${provider}.${random}.${bindingOf(random, codeChallenge)}`
}

/** The provider a code was issued for. */
export function providerOfLoginCode (code: string): string {
  return code.slice(0, code.indexOf('.'))
}

/** Whether `codeVerifier` is the verifier of the challenge the code was bound to; false without one. */
export function verifierMatches (code: string, codeVerifier: string | undefined): boolean {
  const [, random, binding, ...rest] = code.split('.')
  if (codeVerifier === undefined || random === undefined || binding === undefined || rest.length > 0) return false
  const expected = Buffer.from(bindingOf(random, s256(codeVerifier)))
  const given = Buffer.from(binding)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

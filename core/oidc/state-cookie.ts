import type { Sealer } from '../secrets/sealing.js'

/** What the sign-in start leaves in the browser for its callback: the checks the provider's answer must pass, and where to go after. */
export interface PendingSignIn {
  state: string
  nonce: string
  codeVerifier: string
  redirectTo: string
  /** Header variant: the PKCE code_challenge (S256) of the app that started the sign-in, which the #code= is bound to. */
  codeChallenge?: string
  /** Milliseconds since the epoch. */
  expiresAt: number
}

export const STATE_COOKIE = 'oidc_state'

/**
 * The state cookie of one callback (a mount's provider): its name and attributes. With Secure
 * (COOKIE_SECURE, always on in production) it is a `__Host-` cookie: a browser keeps it only as
 * Secure, Path=/ and without Domain, so neither a sibling subdomain nor a plain-HTTP page of this
 * host can plant a pending sign-in of its own there (login CSRF) or shadow ours (issue 21). The
 * prefix needs Path=/, so the cookie no longer sits on the callback's path: the name carries the
 * callback instead (`__Host-oidc_state.google`, `__Host-oidc_state.v2.google` under a mount `/v2`),
 * so sign-ins with two providers in one browser still keep one cookie each. Without Secure the
 * prefix cannot apply (a browser refuses a `__Host-` cookie that is not Secure): the plain name.
 * The session cookies are another matter: the contract fixes their names (accessToken, refreshToken)
 * and the refresh cookie's narrow Path, so no prefix for them.
 */
export function stateCookie (mountPrefix: string, provider: string, secure: boolean) {
  const callback = `${mountPrefix}/${provider}`.replace(/[^A-Za-z0-9_-]+/g, '.')
  return {
    name: `${secure ? '__Host-' : ''}${STATE_COOKIE}${callback}`,
    options: { httpOnly: true, secure, sameSite: 'lax' as const, path: '/' }
  }
}
/** Long enough to log in at the provider (and register there); short enough that a stale one does not linger. */
export const STATE_TTL_SECONDS = 600

/**
 * The pending sign-in sealed (AES-256-GCM with a key the store keeps) for the provider it was started
 * with: the browser holds it without being able to read or alter it, and a cookie of one provider
 * does not open at another's callback. Undefined when it does not open or has expired.
 */
export function sealPending (sealer: Sealer, provider: string, pending: PendingSignIn): string {
  return sealer.seal(JSON.stringify(pending), `oidc-state:${provider}`)
}

export function openPending (sealer: Sealer, provider: string, cookie: string | undefined, now: number): PendingSignIn | undefined {
  if (cookie === undefined || cookie === '') return undefined
  let pending: PendingSignIn
  try {
    pending = JSON.parse(sealer.open(cookie, `oidc-state:${provider}`)) as PendingSignIn
  } catch {
    return undefined
  }
  return pending.expiresAt > now ? pending : undefined
}

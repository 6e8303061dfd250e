// "Sign in with a passkey", shared by the account console and the apps' sign-in page: the authenticator
// offers the passkeys it holds for this site (no email typed).
import { authorized, call, explain } from './api.js'

/** Whether this browser can do it (the button stays hidden otherwise). */
export const passkeysAvailable = typeof window.PublicKeyCredential?.parseRequestOptionsFromJSON === 'function'

/**
 * The passkey ceremony and the login it ends with: `{ answer }` (the login's answer, its body read only
 * when `read`), or `{ error }` to show. The console leaves the answer unread (it holds a token the
 * console has no use for); the apps' sign-in page of the header variant needs its access token.
 */
export async function passkeySignIn ({ read }) {
  const { credential, error } = await passkeyAssertion()
  if (error !== undefined) return { error }
  const answer = await call('POST', 'auth/passkeys/login', credential, { read })
  return answer.status === 200 ? { answer } : { error: explain(answer) }
}

/**
 * A passkey of the signed-in user confirms its session (POST /auth/passkeys/reauthenticate): a fresh proof that
 * used a second factor, which adding TOTP or another passkey asks of an account that has one. `{}` when done.
 */
export async function passkeyStepUp () {
  const { credential, error } = await passkeyAssertion()
  if (error !== undefined) return { error }
  const answer = await authorized('POST', 'auth/passkeys/reauthenticate', credential)
  return answer.status === 204 ? {} : { error: explain(answer) }
}

/** The ceremony: the service's options, the authenticator's answer as JSON, or `{ error }` to show. */
async function passkeyAssertion () {
  const options = await call('POST', 'auth/passkeys/authentication-options')
  if (options.status !== 200) return { error: explain(options) }
  try {
    const credential = await navigator.credentials.get({ publicKey: window.PublicKeyCredential.parseRequestOptionsFromJSON(options.body) })
    return { credential: credential.toJSON() }
  } catch {
    return { error: 'No passkey was used (cancelled, or none on this device).' }
  }
}

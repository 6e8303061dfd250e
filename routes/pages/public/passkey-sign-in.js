// "Sign in with a passkey", shared by the account console and the apps' sign-in page: the authenticator
// offers the passkeys it holds for this site (no email typed).
import { call, explain } from './api.js'

/** Whether this browser can do it (the button stays hidden otherwise). */
export const passkeysAvailable = typeof window.PublicKeyCredential?.parseRequestOptionsFromJSON === 'function'

/**
 * The passkey ceremony and the login it ends with: `{ answer }` (the login's answer, its body read only
 * when `read`), or `{ error }` to show. The console leaves the answer unread (it holds a token the
 * console has no use for); the apps' sign-in page of the header variant needs its access token.
 */
export async function passkeySignIn ({ read }) {
  const options = await call('POST', 'auth/passkeys/authentication-options')
  if (options.status !== 200) return { error: explain(options) }
  let credential
  try {
    credential = await navigator.credentials.get({ publicKey: window.PublicKeyCredential.parseRequestOptionsFromJSON(options.body) })
  } catch {
    return { error: 'No passkey was used (cancelled, or none on this device).' }
  }
  const answer = await call('POST', 'auth/passkeys/login', credential.toJSON(), { read })
  return answer.status === 200 ? { answer } : { error: explain(answer) }
}

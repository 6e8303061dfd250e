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
  // A browser runs one WebAuthn request at a time: the autofill's waiting one gives way to this modal one.
  stopPasskeyAutofill()
  const options = await call('POST', 'auth/passkeys/authentication-options')
  if (options.status !== 200) return { error: explain(options) }
  try {
    const credential = await navigator.credentials.get({ publicKey: window.PublicKeyCredential.parseRequestOptionsFromJSON(options.body) })
    return { credential: credential.toJSON() }
  } catch {
    return { error: 'No passkey was used (cancelled, or none on this device).' }
  }
}

// ---- Passkey autofill (conditional mediation): the browser lists this site's passkeys in the autofill of the
// input marked autocomplete="username webauthn", and choosing one signs in without a press of "Sign in with a passkey".

// The service's challenge is good for 5 minutes: a sign-in page left open asks for a new one before then.
const AUTOFILL_RENEW_MS = 4 * 60 * 1000
// The waiting conditional request, aborted when another sign-in starts or the page leaves the sign-in form.
let autofill = null

/** Whether this browser offers passkeys in autofill (PublicKeyCredential.isConditionalMediationAvailable). */
export async function passkeyAutofillAvailable () {
  if (!passkeysAvailable || typeof window.PublicKeyCredential.isConditionalMediationAvailable !== 'function') return false
  try {
    return await window.PublicKeyCredential.isConditionalMediationAvailable() === true
  } catch {
    return false
  }
}

/**
 * Starts the autofill's request, where the browser can: a passkey chosen there ends in POST auth/passkeys/login,
 * then `signedIn(answer)` (its body read only when `read`); a refused one in `failed(text)`. Nothing happens (and
 * nothing is shown) until the person picks a passkey.
 */
export async function startPasskeyAutofill ({ read, signedIn, failed }) {
  stopPasskeyAutofill()
  const controller = new AbortController()
  autofill = controller
  if (!(await passkeyAutofillAvailable()) || controller.signal.aborted) return
  const options = await call('POST', 'auth/passkeys/authentication-options')
  if (options.status !== 200 || controller.signal.aborted) return
  const renew = setTimeout(() => { if (autofill === controller) startPasskeyAutofill({ read, signedIn, failed }) }, AUTOFILL_RENEW_MS)
  let credential
  try {
    const publicKey = window.PublicKeyCredential.parseRequestOptionsFromJSON(options.body)
    credential = await navigator.credentials.get({ mediation: 'conditional', publicKey, signal: controller.signal })
  } catch {
    // Aborted (another sign-in began, the page moved on, the challenge was renewed) or refused by the browser.
    return
  } finally {
    clearTimeout(renew)
  }
  if (autofill !== controller || credential === null) return
  autofill = null
  const answer = await call('POST', 'auth/passkeys/login', credential.toJSON(), { read })
  if (answer.status === 200) return await signedIn(answer)
  // Not started again by itself: a browser that answers at once (an automated one) would loop. The button stays.
  failed(explain(answer))
}

/** Ends the autofill's waiting request, if any (a modal passkey request, a sign-in by other means, the console shown). */
export function stopPasskeyAutofill () {
  autofill?.abort()
  autofill = null
}

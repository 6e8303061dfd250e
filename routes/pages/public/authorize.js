// The sign-in and consent of an app that signs people in with this service (OAuth / OpenID Connect).
// The page signs in through the service's own API (password, then the second factor; a passkey, chosen
// with its button or from the email input's autofill; a mailed code, which also signs up), then
// tells the interaction who signed in: in the cookie variant the access cookie says it, in the header
// variant the login's access token is sent once, in a header, and not kept.
import { call } from './api.js'
import { fieldsOf, markInvalid, messageOf, onClick, onSubmit, say } from './forms.js'
import { passkeySignIn, passkeysAvailable, startPasskeyAutofill, stopPasskeyAutofill } from './passkey-sign-in.js'
import { setUpEmailCode } from './email-code.js'

const $ = (selector) => document.querySelector(selector)
const HEADER_VARIANT = document.body.dataset.variant === 'header'
const interaction = window.location.pathname.replace(/\/+$/, '')
const status = $('#status')

const SCOPES = {
  openid: 'Know who you are (your account id)',
  email: 'See your email address',
  profile: 'See your name',
  offline_access: 'Stay signed in while you are away'
}

let mfaToken = null

function explain (answer) {
  if (answer.status === 429) return `Too many attempts. Try again in ${answer.retryAfter ?? 'a few'} seconds.`
  return answer.body?.message ?? `Something went wrong (HTTP ${answer.status}). Try again.`
}

/** POSTs to this interaction; the browser's interaction cookie (path: this page) binds it. */
async function step (path, body, accessToken) {
  const headers = { 'content-type': 'application/json' }
  if (accessToken) headers.authorization = `Bearer ${accessToken}`
  let response
  try {
    response = await fetch(`${interaction}/${path}`, { method: 'POST', credentials: 'same-origin', cache: 'no-store', headers, body: JSON.stringify(body ?? {}) })
  } catch {
    return { status: 0, body: { message: 'The service could not be reached. Check your connection and try again.' } }
  }
  let answer
  try { answer = await response.json() } catch { answer = undefined }
  return { status: response.status, body: answer }
}

/** After a sign-in through the API: the interaction takes its user, and the browser goes on (to consent or to the app). */
async function signedIn (loginAnswer, message) {
  const accessToken = HEADER_VARIANT ? loginAnswer.body?.accessToken : undefined
  const answer = await step('login', {}, accessToken)
  if (answer.status !== 200) return say(message, explain(answer), 'error')
  window.location.assign(answer.body.location)
}

const PASSWORD_HINT = $('#mfa-hint').textContent
const MAILED_CODE_HINT = 'The code from the mail is right. Type the six-digit code your authenticator app shows, or one of your recovery codes.'

/** The second factor's step, for the mfa_token of a 403 MFA_REQUIRED (after a password, a mailed code or a provider). */
function showCodeStep (token, hint = PASSWORD_HINT) {
  stopPasskeyAutofill()
  $('#mfa-hint').textContent = hint
  mfaToken = token
  $('#login-form').hidden = true
  $('#mailed-code-form').hidden = true
  $('#mfa-form').hidden = false
  $('#mfa-title').focus()
}

onSubmit($('#login-form'), async (form) => {
  const message = messageOf(form)
  say(message, '')
  const answer = await call('POST', 'auth/login', fieldsOf(form))
  if (answer.status === 403 && answer.body?.code === 'MFA_REQUIRED') return showCodeStep(answer.body.mfa_token)
  if (answer.status !== 200) {
    markInvalid(form, answer.body?.code === 'INVALID_CREDENTIALS' ? ['password'] : [])
    return say(message, explain(answer), 'error')
  }
  await signedIn(answer, message)
})

onSubmit($('#mfa-form'), async (form) => {
  const message = messageOf(form)
  const code = fieldsOf(form).code ?? ''
  const answer = await call('POST', 'auth/mfa/verify', { mfa_token: mfaToken, code: code.trim() })
  if (answer.status !== 200) return say(message, explain(answer), 'error')
  await signedIn(answer, message)
})

const passkeyLogin = $('#passkey-login')
passkeyLogin.hidden = !passkeysAvailable
onClick(passkeyLogin, async () => {
  const message = messageOf($('#login-form'))
  say(message, '')
  const { answer, error } = await passkeySignIn({ read: true })
  if (error !== undefined) {
    say(message, error, 'error')
    // The modal request ended the autofill's: it waits again.
    return startAutofill()
  }
  await signedIn(answer, message)
})

// Passkey autofill on the email input (autocomplete="username webauthn"), waiting while the sign-in form is shown.
const autofill = {
  read: true,
  signedIn: (answer) => signedIn(answer, messageOf($('#login-form'))),
  failed: (text) => say(messageOf($('#login-form')), text, 'error')
}
const startAutofill = () => { startPasskeyAutofill(autofill) }

// "Email me a code": the interaction goes on as after a password (POST <interaction>/login with the new session),
// for an account the code signs in to and for one it creates.
setUpEmailCode({
  read: true,
  leaving: stopPasskeyAutofill,
  back: startAutofill,
  mfaRequired: (token) => showCodeStep(token, MAILED_CODE_HINT),
  signedIn: (answer) => signedIn(answer, messageOf($('#mailed-code-form')))
})

// Which button sent the consent form: Allow or Deny.
let allow = false
for (const button of $('#consent-form').querySelectorAll('button[name=allow]')) {
  button.addEventListener('click', () => { allow = button.value === 'true' })
}
onSubmit($('#consent-form'), async (form) => {
  const answer = await step('consent', { allow })
  if (answer.status !== 200) return say(messageOf(form), explain(answer), 'error')
  window.location.assign(answer.body.location)
})

// Sign-in with an upstream OpenID provider: a plain navigation to the API, which comes back to this page.
// In the cookie variant the session's cookies are set on the way; in the header variant the page gets a
// one-time #code=, bound to a PKCE challenge it made and kept in sessionStorage, and exchanges it.
const VERIFIER_KEY = 'authorize.provider_verifier'

function randomVerifier () {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

async function challengeOf (verifier) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)))
  return btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

async function showProviders () {
  const answer = await call('GET', 'auth/oidc/providers')
  const providers = answer.status === 200 ? answer.body.providers : []
  $('#oidc-providers').replaceChildren(...providers.map((provider) => {
    const link = document.createElement('a')
    link.className = 'button'
    link.href = '#'
    link.textContent = `Sign in with ${provider.label}`
    link.addEventListener('click', async (event) => {
      event.preventDefault()
      const back = new URLSearchParams({ redirect_to: interaction })
      if (HEADER_VARIANT) {
        const verifier = randomVerifier()
        sessionStorage.setItem(VERIFIER_KEY, verifier)
        back.set('code_challenge', await challengeOf(verifier))
      }
      window.location.assign(`${document.body.dataset.api}auth/oidc/${encodeURIComponent(provider.name)}?${back}`)
    })
    const item = document.createElement('li')
    item.append(link)
    return item
  }))
  $('#oidc-login').hidden = providers.length === 0
}

/** What a provider sign-in left in the fragment (#code=, #mfa_token=, #error=), taken out of the address bar. */
async function arrivedFromProvider () {
  const values = new URLSearchParams(window.location.hash.slice(1))
  if (window.location.hash === '') return false
  window.history.replaceState(null, '', window.location.pathname)
  const message = messageOf($('#login-form'))
  if (values.get('mfa_token')) {
    $('#login-form').hidden = false
    showCodeStep(values.get('mfa_token'))
    return true
  }
  if (values.get('error')) {
    say(message, `The sign-in with the provider did not work (${values.get('error').replace(/[^a-z_]/g, '')}). Try again.`, 'error')
    return false
  }
  const code = values.get('code')
  const verifier = sessionStorage.getItem(VERIFIER_KEY)
  sessionStorage.removeItem(VERIFIER_KEY)
  if (!code || !verifier) return false
  const answer = await call('POST', 'auth/oidc/exchange', { code, code_verifier: verifier })
  if (answer.status !== 200) {
    say(message, explain(answer), 'error')
    return false
  }
  await signedIn(answer, message)
  return true
}

async function start () {
  let details
  try {
    const response = await fetch(`${interaction}/details`, { credentials: 'same-origin', cache: 'no-store' })
    details = { status: response.status, body: await response.json() }
  } catch {
    details = { status: 0, body: undefined }
  }
  if (details.status !== 200) {
    $('#title').textContent = 'This sign-in cannot go on'
    return say(status, explain(details), 'error')
  }
  for (const element of document.querySelectorAll('[data-field=client]')) element.textContent = details.body.client.name
  if (details.body.prompt === 'consent') {
    $('#title').textContent = 'Allow access'
    const list = $('#scopes')
    for (const scope of details.body.scopes) {
      const item = document.createElement('li')
      item.textContent = SCOPES[scope] ?? scope
      list.append(item)
    }
    $('#consent-form').hidden = false
    return $('#consent-title').focus()
  }
  await showProviders()
  if (await arrivedFromProvider()) return
  // Cookie variant: someone already signed in to the service (the account console, a provider) goes straight on,
  // unless the app asked for a fresh sign-in (prompt=login, max_age): then the password or a passkey is asked again.
  if (details.body.freshSignIn) {
    say(messageOf($('#login-form')), `${details.body.client.name} asks you to sign in again.`)
  } else if (!HEADER_VARIANT) {
    const answer = await step('login', {})
    if (answer.status === 200) return window.location.assign(answer.body.location)
  }
  $('#login-form').hidden = false
  $('#login-email').focus()
  startAutofill()
}

start()

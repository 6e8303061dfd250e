// Sign-in with an OpenID Connect provider in the console: one "Sign in with <label>" link per provider
// (a plain navigation to the API, which sends the browser to the provider and back here), what the
// callback put in this page's fragment (#error=… or #mfa_token=…), and the identities linked to the account.
import { API, CONSOLE, authorized, call } from './api.js'
import { freshCall, refused } from './account-security.js'
import { say, timeElement } from './forms.js'

const $ = (selector) => document.querySelector(selector)
// The provider's label by its name, for the linked identities (GET /auth/identities names the provider only).
const labels = new Map()

/** What each #error= of the callback means to the person who tried to sign in. */
const ERROR_MESSAGES = {
  access_denied: 'The sign-in was cancelled at the provider: you are not signed in.',
  invalid_response: 'The provider\'s answer could not be trusted or has expired. Try signing in again.',
  account_exists: 'An account with that email address exists already and could not be linked just now. Try signing in again.',
  identity_conflict: 'The account with that email address already has another account of this provider linked to it. Sign in with that one, or with the account\'s password.',
  email_required: 'The provider did not share your email address, which an account here needs.',
  invalid_email: 'The email address the provider gave is not a valid address, so no account can use it. Correct it at the provider, or register here with your address.',
  account_disabled: 'This account is disabled: an administrator has turned it off. Ask them to enable it.',
  email_not_verified: 'The provider has not confirmed that this email address is yours, so it cannot sign you in here. Confirm the address with the provider (or follow the verification link we mailed you), then try again.'
}

/** The fragment the sign-in's callback left (#error=… or #mfa_token=…), removed from the address bar at once. */
export function takeSignInFragment () {
  const values = new URLSearchParams(window.location.hash.slice(1))
  if (window.location.hash !== '') window.history.replaceState(null, '', window.location.pathname + window.location.search)
  const mfaToken = values.get('mfa_token')
  if (mfaToken !== null && /^[A-Za-z0-9_.~-]{1,2048}$/.test(mfaToken)) return { mfaToken }
  const error = values.get('error')
  if (error !== null) return { error: ERROR_MESSAGES[error] ?? `The sign-in with the provider failed (${error.replace(/[^a-z_]/g, '').slice(0, 40)}). Try again.` }
  return {}
}

/** The "Sign in with <label>" links, one per provider; the section stays hidden when there is none. */
export async function loadProviders () {
  const answer = await call('GET', 'auth/oidc/providers')
  const providers = answer.status === 200 ? answer.body.providers : []
  labels.clear()
  for (const provider of providers) labels.set(provider.name, provider.label)
  const back = CONSOLE === '' ? '' : `?redirect_to=${encodeURIComponent(CONSOLE)}`
  $('#oidc-providers').replaceChildren(...providers.map((provider) => {
    const link = document.createElement('a')
    link.className = 'button'
    link.href = `${API}auth/oidc/${encodeURIComponent(provider.name)}${back}`
    link.textContent = `Sign in with ${provider.label}`
    const item = document.createElement('li')
    item.append(link)
    return item
  }))
  $('#oidc-login').hidden = providers.length === 0
}

const section = $('#identities-title').parentElement
const message = $('#identities-message')

function identityItem (identity, reload) {
  const label = labels.get(identity.provider) ?? identity.provider
  const item = document.createElement('li')
  item.dataset.provider = identity.provider
  const title = document.createElement('p')
  const name = document.createElement('strong')
  name.textContent = label
  title.append(name)
  const details = document.createElement('p')
  details.className = 'agent'
  details.append(`${identity.email ?? 'No email shared'} · linked `, timeElement(identity.created_at))
  const unlink = document.createElement('button')
  unlink.type = 'button'
  unlink.className = 'secondary'
  unlink.textContent = 'Unlink'
  unlink.setAttribute('aria-label', `Unlink ${label}${identity.email ? ` (${identity.email})` : ''}`)
  unlink.addEventListener('click', async () => {
    unlink.disabled = true
    say(message, '')
    const answer = await freshCall(section, 'DELETE', `auth/identities/${encodeURIComponent(identity.provider)}`)
    unlink.disabled = false
    if (answer?.status !== 204) {
      refused(message, answer)
      return $('#identities-title').focus()
    }
    await reload()
    say(message, `${label} is unlinked: it no longer signs you in.`)
    $('#identities-title').focus()
  })
  item.append(title, details, unlink)
  return item
}

/** The linked identities, with an Unlink button each (`reload()` reads the account again after a change). */
export async function loadIdentities (reload) {
  if (labels.size === 0) await loadProviders()
  const answer = await authorized('GET', 'auth/identities')
  if (answer.status !== 200) return refused(message, answer)
  const { identities } = answer.body
  // Nothing to show or do where no provider is configured and none was linked before.
  section.hidden = identities.length === 0 && labels.size === 0
  if (identities.length === 0) {
    const none = document.createElement('li')
    none.textContent = 'No provider linked.'
    $('#identities').replaceChildren(none)
  } else {
    $('#identities').replaceChildren(...identities.map(identity => identityItem(identity, reload)))
  }
}

/** Forgets what a previous visitor of this page saw. */
export function resetIdentities () {
  $('#identities').replaceChildren()
  say(message, '')
}

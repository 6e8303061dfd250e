// The admin console (/admin): search users, open one, disable or enable it, end its sessions, reset its
// second factor (each after a confirmation; a change asks for the password again when the session's
// proof is older than REAUTH_MAX_AGE), search organisations and open one with its members, and the audit trail. It signs in through the service's API: in the
// cookie variant the HttpOnly cookies carry the session; in the header variant the access token is kept
// in this page's memory only (gone with the tab).
import { fieldsOf, messageOf, onClick, onSubmit, say, timeElement } from './forms.js'

const $ = (selector) => document.querySelector(selector)
const API = document.body.dataset.api ?? '/'
const HEADER_VARIANT = document.body.dataset.variant === 'header'
const status = $('#status')
const tokens = { access: null, refresh: null }
let mfaToken = null
let nextCursor = null
let nextOrgCursor = null
let shown = null

const OFFLINE = { code: 'NETWORK', message: 'The service could not be reached. Check your connection and try again.' }

async function request (method, url, data, headers = {}) {
  if (HEADER_VARIANT && tokens.access) headers.authorization = `Bearer ${tokens.access}`
  if (data !== undefined) headers['content-type'] = 'application/json'
  let response
  try {
    response = await fetch(url, { method, credentials: 'same-origin', cache: 'no-store', headers, body: data === undefined ? undefined : JSON.stringify(data) })
  } catch {
    return { status: 0, body: OFFLINE }
  }
  const text = await response.text()
  let body
  try { body = text === '' ? undefined : JSON.parse(text) } catch { body = undefined }
  return { status: response.status, body }
}

/** A call of the service's own API (login, refresh, re-authentication), under the pages' API prefix. */
const api = (method, path, data) => request(method, API + path, data)

/** An admin route (always at /admin), renewing an expired access token once. */
async function admin (method, path, data) {
  const answer = await request(method, `/admin/${path}`, data)
  if (answer.status !== 401 || answer.body?.code !== 'TOKEN_EXPIRED') return answer
  const renewed = HEADER_VARIANT
    ? await request('POST', `${API}auth/refresh-token`, undefined, { 'x-refresh-token': `Bearer ${tokens.refresh}` })
    : await api('POST', 'auth/refresh-token')
  if (renewed.status !== 200) return answer
  if (HEADER_VARIANT) tokens.access = renewed.body.accessToken
  return request(method, `/admin/${path}`, data)
}

function explain (answer) {
  if (answer.status === 429) return 'Too many requests. Try again in a minute.'
  return answer.body?.message ?? `Something went wrong (HTTP ${answer.status}). Try again.`
}

function showSignedOut (message = '', kind = 'ok') {
  tokens.access = null
  tokens.refresh = null
  $('#signed-in').hidden = true
  $('#signed-out').hidden = false
  $('#mfa-form').hidden = true
  $('#login-form').hidden = false
  say(status, message, kind)
}

/** Why the console cannot be used, for the refusals of the admin API. */
function refusal (answer) {
  if (answer.body?.code === 'FORBIDDEN') return 'This account is not an administrator.'
  if (answer.body?.code === 'MFA_ENROLLMENT_REQUIRED') return 'Administrators need a second factor: turn on an authenticator app in your account first.'
  if (answer.body?.code === 'SECOND_FACTOR_REQUIRED') {
    // The account has a second factor, but this sign-in did not use it (a password alone): a password thief gets no further.
    return 'Administrators must use their second factor to sign in: sign out, then sign in with your password and authenticator code. ' +
      'With passkeys only: sign in with a passkey at /account (or confirm your session there with it), or turn on an authenticator app.'
  }
  if (answer.body?.code === 'ACCOUNT_DISABLED') return 'This account is disabled.'
  return explain(answer)
}

function element (tag, { text, className } = {}, ...children) {
  const node = document.createElement(tag)
  if (text !== undefined) node.textContent = text
  if (className) node.className = className
  node.append(...children)
  return node
}

function renderUsers (users, append) {
  const items = users.map((user) => {
    const open = element('button', { text: 'Open', className: 'secondary' })
    open.type = 'button'
    open.setAttribute('aria-label', `Open ${user.email}`)
    open.addEventListener('click', () => openUser(user.id))
    const badges = [user.role === 'admin' ? ' · admin' : '', user.disabled ? ' · disabled' : ''].join('')
    const item = element('li', {},
      element('p', {}, element('strong', { text: user.email }), badges),
      element('p', { className: 'agent', text: `${user.first_name} ${user.last_name}${user.username ? ` (${user.username})` : ''}` }),
      open)
    item.dataset.user = String(user.id)
    return item
  })
  if (append) $('#users').append(...items)
  else $('#users').replaceChildren(...(items.length > 0 ? items : [element('li', { text: 'No user matches.' })]))
}

async function search ({ append = false } = {}) {
  const query = $('#search-query').value.trim()
  const params = new URLSearchParams({ limit: '20' })
  if (query !== '') params.set('query', query)
  if (append && nextCursor) params.set('cursor', nextCursor)
  const answer = await admin('GET', `users?${params}`)
  if (answer.status !== 200) return say(messageOf($('#search-form')), refusal(answer), 'error')
  say(messageOf($('#search-form')), '')
  renderUsers(answer.body.users, append)
  nextCursor = answer.body.next_cursor ?? null
  $('#more-users').hidden = nextCursor === null
}

function listOf (target, entries, describe, empty) {
  target.replaceChildren(...(entries.length > 0 ? entries.map(entry => element('li', {}, ...describe(entry))) : [element('li', { text: empty })]))
}

async function openUser (id) {
  const answer = await admin('GET', `users/${encodeURIComponent(id)}`)
  if (answer.status !== 200) return say(messageOf($('#search-form')), refusal(answer), 'error')
  shown = answer.body
  $('#user-title').textContent = shown.email
  const fields = [['Name', `${shown.first_name} ${shown.last_name}`], ['Username', shown.username ?? '—'], ['Role', shown.role],
    ['Email verified', shown.email_verified ? 'yes' : 'no'], ['Disabled', shown.disabled ? 'yes' : 'no'],
    ['Created', shown.created_at], ['Last sign-in', shown.last_login_at ?? 'never']]
  $('#user-fields').replaceChildren(...fields.flatMap(([name, value]) => [element('dt', { text: name }), element('dd', { text: String(value) })]))
  listOf($('#user-sessions'), shown.sessions ?? [], session => [element('p', { text: session.user_agent ?? 'No user agent' }),
    element('p', { className: 'agent' }, `Address ${session.ip ?? 'unknown'} · last used `, timeElement(session.last_used_at))], 'No live session.')
  listOf($('#user-identities'), shown.identities ?? [], identity => [element('p', { text: `${identity.provider}${identity.email ? ` · ${identity.email}` : ''}` })], 'None linked.')
  const factors = shown.second_factors ?? {}
  const described = [`Authenticator app: ${factors.totp ? 'on' : 'off'}`, `Passkeys: ${(factors.passkeys ?? []).length}`]
  listOf($('#user-factors'), described, text => [element('p', { text })], 'None.')
  $('#disable').hidden = shown.disabled === true
  $('#enable').hidden = shown.disabled !== true
  say(messageOf($('#user')), '')
  $('#user').hidden = false
  $('#user-title').focus()
  await loadEvents(shown.id)
}

async function loadEvents (userId) {
  const params = new URLSearchParams({ limit: '30' })
  if (userId !== undefined) params.set('user', String(userId))
  const answer = await admin('GET', `events?${params}`)
  if (answer.status !== 200) return
  listOf($('#events'), answer.body.events, event => [
    element('p', {}, element('strong', { text: event.type }), ' · ', timeElement(event.created_at)),
    element('p', { className: 'agent', text: `user ${event.user_id ?? '—'}${event.actor_id ? ` · by admin ${event.actor_id}` : ''} · address ${event.ip ?? 'unknown'}` })
  ], 'Nothing yet.')
}

function renderOrgs (orgs, append) {
  const items = orgs.map((org) => {
    const open = element('button', { text: 'Open', className: 'secondary' })
    open.type = 'button'
    open.setAttribute('aria-label', `Open ${org.name}`)
    open.addEventListener('click', () => openOrg(org.id))
    const item = element('li', {},
      element('p', {}, element('strong', { text: org.name }), ` · ${org.slug}`),
      element('p', { className: 'agent', text: `${org.member_count} member${org.member_count === 1 ? '' : 's'}` }),
      open)
    item.dataset.org = String(org.id)
    return item
  })
  if (append) $('#orgs').append(...items)
  else $('#orgs').replaceChildren(...(items.length > 0 ? items : [element('li', { text: 'No organisation matches.' })]))
}

/** GET /admin/orgs: the first page of a search, or the next one (append). */
async function searchOrgs ({ append = false } = {}) {
  const query = $('#org-search-query').value.trim()
  const params = new URLSearchParams({ limit: '20' })
  if (query !== '') params.set('query', query)
  if (append && nextOrgCursor) params.set('cursor', nextOrgCursor)
  const answer = await admin('GET', `orgs?${params}`)
  if (answer.status !== 200) return say(messageOf($('#org-search-form')), refusal(answer), 'error')
  say(messageOf($('#org-search-form')), '')
  renderOrgs(answer.body.orgs, append)
  nextOrgCursor = answer.body.next_cursor ?? null
  $('#more-orgs').hidden = nextOrgCursor === null
}

async function openOrg (id) {
  const answer = await admin('GET', `orgs/${encodeURIComponent(id)}`)
  if (answer.status !== 200) return say(messageOf($('#org-search-form')), refusal(answer), 'error')
  const org = answer.body
  $('#org-title').textContent = org.name
  const fields = [['Slug', org.slug], ['Members', String(org.member_count)], ['Created', org.created_at], ['Changed', org.updated_at]]
  $('#org-fields').replaceChildren(...fields.flatMap(([name, value]) => [element('dt', { text: name }), element('dd', { text: value })]))
  listOf($('#org-members'), org.members, member => {
    const open = element('button', { text: 'Open user', className: 'secondary' })
    open.type = 'button'
    open.setAttribute('aria-label', `Open user ${member.email}`)
    open.addEventListener('click', () => openUser(member.user_id))
    return [element('p', {}, element('strong', { text: member.email }), ` · ${member.role}`),
      element('p', { className: 'agent' }, `${member.first_name} ${member.last_name} · joined `, timeElement(member.joined_at)), open]
  }, 'No member.')
  $('#org').hidden = false
  $('#org-title').focus()
}

// Every change goes through this confirmation; a 403 REAUTHENTICATION_REQUIRED shows the password (and code) fields.
let pending = null

function field (id, name, label, attributes) {
  const input = element('input')
  input.id = id
  input.name = name
  for (const [key, value] of Object.entries(attributes)) input.setAttribute(key, value)
  const labelElement = element('label', { text: label })
  labelElement.htmlFor = id
  return [labelElement, input]
}

function showReauthFields () {
  $('#reauth').replaceChildren(
    element('p', { className: 'hint', text: 'This change needs a recent proof that it is you.' }),
    ...field('reauth-password', 'password', 'Your password', { type: 'password', autocomplete: 'current-password' }),
    ...field('reauth-code', 'code', 'Authenticator code (when it is on)', { autocomplete: 'one-time-code' }))
  $('#reauth').hidden = false
}

function confirmChange (question, change) {
  pending = change
  $('#confirm-question').textContent = question
  $('#reauth').replaceChildren()
  $('#reauth').hidden = true
  $('#confirm-form').reset()
  say(messageOf($('#confirm-form')), '')
  $('#confirm-form').hidden = false
  $('#confirm-title').focus()
}

onSubmit($('#confirm-form'), async (form) => {
  const message = messageOf(form)
  if (!$('#reauth').hidden) {
    const { password, code } = fieldsOf(form, { skipEmpty: true })
    const proof = await api('POST', 'auth/reauthenticate', code ? { password, code } : { password })
    if (proof.status !== 200 && proof.status !== 204) return say(message, explain(proof), 'error')
  }
  const answer = await pending()
  if (answer.status === 403 && answer.body?.code === 'REAUTHENTICATION_REQUIRED') {
    showReauthFields()
    $('#reauth-password').focus()
    return say(message, 'Confirm with your password first.', 'error')
  }
  if (answer.status >= 300) return say(message, refusal(answer), 'error')
  form.hidden = true
  await openUser(shown.id)
  say(messageOf($('#user')), 'Done.')
})
onClick($('#confirm-cancel'), async () => {
  $('#confirm-form').hidden = true
  $('#user-title').focus()
})

onClick($('#disable'), async () => confirmChange(`Disable ${shown.email}? Their sessions end at once and they cannot sign in until enabled.`, () => admin('POST', `users/${shown.id}/disable`)))
onClick($('#enable'), async () => confirmChange(`Enable ${shown.email} again?`, () => admin('POST', `users/${shown.id}/enable`)))
onClick($('#end-sessions'), async () => confirmChange(`End every session of ${shown.email}?`, () => admin('DELETE', `users/${shown.id}/sessions`)))
onClick($('#reset-mfa'), async () => confirmChange(`Reset the second factor of ${shown.email}? Their next sign-in asks for the password only.`, () => admin('DELETE', `users/${shown.id}/mfa`)))

onSubmit($('#search-form'), async () => search())
onClick($('#more-users'), async () => search({ append: true }))
onSubmit($('#org-search-form'), async () => searchOrgs())
onClick($('#more-orgs'), async () => searchOrgs({ append: true }))

async function signedIn (answer, message) {
  if (HEADER_VARIANT) {
    tokens.access = answer.body?.accessToken ?? null
    tokens.refresh = answer.body?.refreshToken ?? null
  }
  if (!await showConsole()) say(message, refusal(lastRefusal), 'error')
}

onSubmit($('#login-form'), async (form) => {
  const message = messageOf(form)
  say(message, '')
  const answer = await api('POST', 'auth/login', fieldsOf(form))
  if (answer.status === 403 && answer.body?.code === 'MFA_REQUIRED') {
    mfaToken = answer.body.mfa_token
    form.hidden = true
    $('#mfa-form').hidden = false
    return $('#mfa-title').focus()
  }
  if (answer.status !== 200) return say(message, explain(answer), 'error')
  await signedIn(answer, message)
})

onSubmit($('#mfa-form'), async (form) => {
  const message = messageOf(form)
  const answer = await api('POST', 'auth/mfa/verify', { mfa_token: mfaToken, code: (fieldsOf(form).code ?? '').trim() })
  if (answer.status !== 200) return say(message, explain(answer), 'error')
  await signedIn(answer, message)
})

let lastRefusal = null
/** Shows the console when the session is an admin's; else the sign-in with why not. */
async function showConsole () {
  const answer = await admin('GET', 'users?limit=20')
  if (answer.status !== 200) {
    lastRefusal = answer
    showSignedOut(answer.status === 401 ? '' : refusal(answer), 'error')
    return false
  }
  $('#signed-out').hidden = true
  $('#signed-in').hidden = false
  renderUsers(answer.body.users, false)
  nextCursor = answer.body.next_cursor ?? null
  $('#more-users').hidden = nextCursor === null
  await searchOrgs()
  await loadEvents()
  $('#search-title').focus()
  return true
}

showConsole()

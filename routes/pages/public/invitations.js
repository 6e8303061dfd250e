// /invitations#token=…: the invitation mail's link. It names the organisation, who invites, the role and
// the invited address (POST invitations/preview, no sign-in), then accepts (POST invitations/accept) for a
// visitor signed in as that address; a visitor signed out signs in or creates an account here first, one
// signed in as another address is told so and may sign out. Opening the link accepts nothing: a mail
// scanner that fetches it spends nothing. The API is the cookie variant's where mounted (its HttpOnly
// cookies carry the session, a console sign-in counts here too); else the header variant's, whose tokens
// this page keeps in memory only (gone with the tab), as the admin console does.
import { blamedFields, explain } from './api.js'
import { fieldsOf, markInvalid, messageOf, onClick, onSubmit, say, takeFragmentToken } from './forms.js'

const $ = (selector) => document.querySelector(selector)
const API = document.body.dataset.api ?? '/'
const CONSOLE = document.body.dataset.console ?? ''
const HEADER_VARIANT = document.body.dataset.variant === 'header'
const OFFLINE = { code: 'NETWORK', message: 'The service could not be reached. Check your connection and try again.' }
const ROLES = { owner: 'Owner', admin: 'Administrator', member: 'Member' }
const SECTIONS = ['#invitation', '#accept', '#mismatch', '#signed-out', '#joined', '#unusable']
const status = $('#status')
const tokens = { access: null, refresh: null }
const token = takeFragmentToken()
let invitation = null
// The login's second step: the mfa_token of its 403 MFA_REQUIRED answer (no session token: it only lets
// POST /auth/mfa/verify finish this one login, with a code).
let mfaToken = null
// The address a sign-in code was mailed to ("Email me a code"), for the code's verification.
let codeEmail = null

for (const element of document.querySelectorAll(CONSOLE === '' ? '.app-only' : '.console-only')) element.hidden = false
// The header variant's registration takes no username (its schema refuses one).
if (HEADER_VARIANT) $('#register-username-field').remove()

async function request (method, path, data, headers = {}) {
  if (HEADER_VARIANT && tokens.access) headers.authorization = `Bearer ${tokens.access}`
  if (data !== undefined) headers['content-type'] = 'application/json'
  let response
  try {
    response = await fetch(API + path, { method, credentials: 'same-origin', cache: 'no-store', headers, body: data === undefined ? undefined : JSON.stringify(data) })
  } catch {
    return { status: 0, body: OFFLINE, retryAfter: null }
  }
  const text = await response.text()
  let body
  try { body = text === '' ? undefined : JSON.parse(text) } catch { body = undefined }
  return { status: response.status, body, retryAfter: response.headers.get('retry-after') }
}

/** A signed-in call: an expired access token (or cookie) is renewed once with the refresh token, then the call repeated. */
async function authorized (method, path, data) {
  if (HEADER_VARIANT && tokens.access === null) return { status: 401, body: { code: 'MISSING_TOKEN' } }
  const answer = await request(method, path, data)
  if (answer.status !== 401 || !['MISSING_TOKEN', 'TOKEN_EXPIRED'].includes(answer.body?.code)) return answer
  const renewed = HEADER_VARIANT
    ? await request('POST', 'auth/refresh-token', undefined, { 'x-refresh-token': `Bearer ${tokens.refresh}` })
    : await request('POST', 'auth/refresh-token')
  if (renewed.status !== 200) return answer
  if (HEADER_VARIANT) tokens.access = renewed.body.accessToken
  return request(method, path, data)
}

/** Shows the invitation card and the one section named, the focus on `focus` when given. */
function show (section, focus) {
  for (const candidate of SECTIONS) $(candidate).hidden = candidate !== section && !(candidate === '#invitation' && invitation !== null)
  if (focus) $(focus).focus()
}

function unusable (reason) {
  invitation = null
  $('#unusable-reason').textContent = reason
  show('#unusable', '#unusable-title')
}

/** Why an invitation's token is refused (400: used, withdrawn, expired or unknown). */
function refusedToken (answer) {
  if (/EXPIRED/.test(answer.body?.code ?? '')) return unusable('This invitation has expired.')
  unusable('This invitation has been accepted already, withdrawn, or has expired.')
}

const sameAddress = (a, b) => a.trim().toLowerCase() === b.trim().toLowerCase()

function fill (container, values) {
  for (const cell of container.querySelectorAll('[data-field]')) {
    if (cell.dataset.field in values) cell.textContent = values[cell.dataset.field]
  }
}

/** The part of the page for who is signed in: nobody, the invited address, or another one. */
function showFor (user, { focus = true } = {}) {
  if (user === null) {
    for (const input of [$('#login-email'), $('#register-email')]) input.value ||= invitation.email
    show('#signed-out', focus ? '#login-title' : undefined)
    return
  }
  if (sameAddress(user.email, invitation.email)) {
    fill($('#accept'), { 'signed-in-as': user.email })
    show('#accept', focus ? '#accept-title' : undefined)
    return
  }
  mismatch(user.email)
}

function mismatch (email) {
  $('#mismatch-text').textContent = `You are signed in as ${email}, but this invitation is for ${invitation.email}. Only that address can accept it.`
  show('#mismatch', '#mismatch-title')
}

/** The signed-in user (GET auth/account), or null when nobody is. */
async function whoIsSignedIn () {
  const answer = await authorized('GET', 'auth/account')
  return answer.status === 200 ? answer.body : null
}

async function accept () {
  const message = messageOf($('#accept'))
  const answer = await authorized('POST', 'invitations/accept', { token })
  if (answer.status === 200) {
    const { org } = answer.body
    $('#joined-title').textContent = `You are a member of ${org.name}`
    $('#joined-text').textContent = `Your role: ${ROLES[org.role] ?? org.role}.`
    invitation = null
    return show('#joined', '#joined-title')
  }
  if (answer.status === 403 && answer.body?.code === 'INVITATION_EMAIL_MISMATCH') {
    const user = await whoIsSignedIn()
    return mismatch(user?.email ?? 'another account')
  }
  if (answer.status === 400) return refusedToken(answer)
  if (answer.status === 401) {
    showFor(null)
    return say(status, 'Your session has ended. Sign in again.', 'error')
  }
  show('#accept')
  say(message, explain(answer), 'error')
}

/** After a login's answer: keep the header variant's tokens, then accept as that user (or say it is another one). */
async function signedIn (answer) {
  if (HEADER_VARIANT) {
    tokens.access = answer.body?.accessToken ?? null
    tokens.refresh = answer.body?.refreshToken ?? null
  }
  showFirstStep()
  const user = await whoIsSignedIn()
  if (user === null) return say(messageOf($('#login-form')), 'The sign-in did not hold. Try again.', 'error')
  say(status, '')
  if (!sameAddress(user.email, invitation.email)) return mismatch(user.email)
  showFor(user, { focus: false })
  await accept()
}

/** Back to the sign-in's first step (email and password, or a mailed code). */
function showFirstStep () {
  mfaToken = null
  codeEmail = null
  $('#email-code-form').hidden = true
  $('#mfa-form').hidden = true
  $('#login-form').hidden = false
}

/** What a login (password or mailed code) answered: signed in, the code step of TOTP, or a refusal shown in `form`. */
async function loginAnswered (answer, form) {
  const message = messageOf(form)
  if (answer.status === 403 && answer.body?.code === 'MFA_REQUIRED') {
    mfaToken = answer.body.mfa_token
    for (const step of ['#login-form', '#email-code-form']) $(step).hidden = true
    $('#mfa-form').hidden = false
    return $('#mfa-title').focus()
  }
  if (answer.status === 403 && answer.body?.code === 'EMAIL_NOT_VERIFIED') {
    return say(message, 'This account\'s address is not verified yet: open the link we mailed to it, then this invitation\'s link again.', 'error')
  }
  if (answer.status !== 200) {
    markInvalid(form, blamedFields(answer))
    return say(message, explain(answer), 'error')
  }
  markInvalid(form, [])
  await signedIn(answer)
}

/** A login with email and password, for the sign-in form and right after registering. */
async function logIn (credentials, form) {
  await loginAnswered(await request('POST', 'auth/login', credentials), form)
}

onSubmit($('#login-form'), async (form) => {
  say(messageOf(form), '')
  await logIn(fieldsOf(form), form)
})

// "Email me a code": the six-digit code mailed to the address typed (POST auth/email-code), then typed here.
onClick($('#email-code-send'), async () => {
  const form = $('#login-form')
  const email = $('#login-email').value.trim()
  if (email === '') {
    markInvalid(form, ['email'])
    return say(messageOf(form), 'Type your email address first.', 'error')
  }
  const answer = await request('POST', 'auth/email-code', { email })
  if (answer.status !== 202) return say(messageOf(form), explain(answer), 'error')
  markInvalid(form, [])
  say(messageOf(form), '')
  codeEmail = email
  $('#email-code-hint').textContent = `If ${email} has an account, a six-digit code is on its way there. It is good for 10 minutes.`
  form.hidden = true
  $('#email-code-form').hidden = false
  $('#email-code-title').focus()
})

onSubmit($('#email-code-form'), async (form) => {
  const code = (fieldsOf(form).code ?? '').trim()
  const answer = await request('POST', 'auth/email-code/verify', { email: codeEmail, code })
  if (answer.status === 401 && answer.body?.code === 'INVALID_CODE') {
    markInvalid(form, ['code'])
    say(messageOf(form), 'That code is not right, has expired or was used. Try again, or go back and ask for a new one.', 'error')
    return $('#email-code').focus()
  }
  await loginAnswered(answer, form)
})

onClick($('#email-code-back'), async () => {
  showFirstStep()
  $('#login-email').focus()
})

onSubmit($('#mfa-form'), async (form) => {
  const answer = await request('POST', 'auth/mfa/verify', { mfa_token: mfaToken, code: (fieldsOf(form).code ?? '').trim() })
  if (answer.status === 200) return signedIn(answer)
  if (answer.status === 401 && answer.body?.code === 'INVALID_MFA_TOKEN') {
    showFirstStep()
    say(messageOf($('#login-form')), `${explain(answer)} Sign in again.`, 'error')
    return $('#login-email').focus()
  }
  markInvalid(form, ['code'])
  say(messageOf(form), answer.body?.code === 'INVALID_MFA_CODE' ? 'That code is not right (or was used already). Try the current one.' : explain(answer), 'error')
  $('#mfa-code').focus()
})

onSubmit($('#register-form'), async (form) => {
  const fields = fieldsOf(form)
  const answer = await request('POST', 'auth/register', fields)
  if (answer.status !== 201) {
    markInvalid(form, blamedFields(answer))
    return say(messageOf(form), explain(answer), 'error')
  }
  markInvalid(form, [])
  say(messageOf(form), 'Your account is created. Signing in…')
  await logIn({ email: fields.email, password: fields.password }, form)
})

onClick($('#accept-button'), accept)

onClick($('#sign-out'), async () => {
  const answer = HEADER_VARIANT
    ? await request('POST', 'auth/logout', undefined, tokens.refresh ? { 'x-refresh-token': `Bearer ${tokens.refresh}` } : {})
    : await request('POST', 'auth/logout')
  if (answer.status !== 204) return say(messageOf($('#mismatch')), explain(answer), 'error')
  tokens.access = null
  tokens.refresh = null
  // The sign-in that follows is the invited address's: its form starts with that address, no password left in it.
  $('#login-email').value = invitation.email
  $('#login-password').value = ''
  showFor(null)
  say(status, 'You are signed out. Sign in with the invited address, or create an account for it.')
})

async function start () {
  if (token === null) return unusable('The link is incomplete. Open it from the mail again.')
  const answer = await request('POST', 'invitations/preview', { token })
  if (answer.status === 400) return refusedToken(answer)
  if (answer.status !== 200) return say(status, explain(answer), 'error')
  invitation = answer.body
  const inviter = invitation.inviter?.name ?? 'A former member'
  $('#invitation-title').textContent = `${inviter} invites you to join ${invitation.org.name}`
  fill($('#invitation'), {
    org: `${invitation.org.name} (${invitation.org.slug})`,
    inviter,
    role: ROLES[invitation.role] ?? invitation.role,
    email: invitation.email,
    expires_at: new Date(invitation.expires_at).toLocaleString()
  })
  showFor(await whoIsSignedIn(), { focus: false })
  $('#invitation-title').focus()
}

start()

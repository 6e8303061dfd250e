// The account console of the cookie variant. The tokens stay in HttpOnly cookies the browser
// sends by itself; this script never reads one (the login and refresh answers, which carry an
// access token in their body, are left unread) and keeps nothing in web storage.
import { authorized, blamedFields, call, explain } from './api.js'
import { renderApps, renderEvents, renderSessions } from './account-lists.js'
import { addPasskey, freshCall, loadPasskeys, passkeyCreationAvailable, reauthRefusal, resetSecurity, setUpSecurity, showTwoStep } from './account-security.js'
import { loadIdentities, loadProviders, resetIdentities, takeSignInFragment } from './account-providers.js'
import { fieldsOf, markInvalid, messageOf, onClick, onSubmit, say } from './forms.js'
import { passkeySignIn, passkeysAvailable, startPasskeyAutofill, stopPasskeyAutofill } from './passkey-sign-in.js'
import { cleanCode, setUpEmailCode, takeCodeLink } from './email-code.js'

const $ = (selector) => document.querySelector(selector)
const status = $('#status')
const PROFILE_FIELDS = ['first_name', 'last_name', 'username']
const PASSWORD_HINT = $('#mfa-hint').textContent
const PROVIDER_HINT = 'The provider has signed you in. Type the six-digit code your authenticator app shows, or one of your recovery codes.'
const MAILED_CODE_HINT = 'The code from the mail is right. Type the six-digit code your authenticator app shows, or one of your recovery codes.'
let user = null
// The login's second step: the mfa_token of its 403 MFA_REQUIRED answer (not a session token: it
// only lets POST /auth/mfa/verify finish this one login, with a code).
let mfaToken = null

/** Back to the first step of the sign-in (email and password). */
function showPasswordStep () {
  mfaToken = null
  emailCode.close()
  $('#mfa-form').reset()
  markInvalid($('#mfa-form'), [])
  say(messageOf($('#mfa-form')), '')
  $('#mfa-form').hidden = true
  $('#login-form').hidden = false
  $('#mfa-hint').textContent = PASSWORD_HINT
}

/** The sign-in's code step, for the mfa_token of a login's 403 MFA_REQUIRED or of a provider's sign-in (#mfa_token=). */
function showCodeStep (token, hint = PASSWORD_HINT) {
  stopPasskeyAutofill()
  mfaToken = token
  $('#login-form').hidden = true
  $('#mfa-hint').textContent = hint
  $('#mfa-form').hidden = false
  $('#mfa-title').focus()
}

function showSignedOut ({ focus = false, message, kind = 'ok' } = {}) {
  user = null
  resetSecurity()
  resetIdentities()
  showPasswordStep()
  showEmailMailedCode(false)
  $('#passkey-offer').hidden = true
  $('#signed-in').hidden = true
  $('#signed-out').hidden = false
  say(status, message ?? '', kind)
  if (focus) $('#login-title').focus()
  startAutofill()
}

// Passkey autofill on the sign-in form's email input (autocomplete="username webauthn"): waiting while the form is shown.
const autofill = {
  read: false,
  signedIn: () => showAccount({ focus: true }),
  failed: (text) => say(messageOf($('#login-form')), text, 'error')
}
const startAutofill = () => { startPasskeyAutofill(autofill) }

// The 401s that refuse a proof (a password, a mailed code, an authenticator code), not the session.
const REFUSED_PROOFS = ['INVALID_CREDENTIALS', 'INVALID_CODE', 'INVALID_MFA_CODE']

/** A signed-in call answered 401 (session ended elsewhere, expired): back to the sign-in form. */
function sessionEnded (answer) {
  if (answer.status !== 401 || REFUSED_PROOFS.includes(answer.body?.code)) return false
  showSignedOut({ focus: true, message: 'Your session has ended. Sign in again.', kind: 'error' })
  return true
}

/** Shows a refusal next to its form, the inputs it names marked invalid. */
function refuse (form, answer) {
  if (sessionEnded(answer)) return
  markInvalid(form, blamedFields(answer))
  say(messageOf(form), explain(answer), 'error')
}

function fillProfile () {
  const shown = {
    ...user,
    username: user.username ?? '—',
    email_verified: user.email_verified ? 'Yes' : 'Not yet',
    created_at: new Date(user.created_at).toLocaleDateString()
  }
  for (const cell of document.querySelectorAll('#signed-in [data-field]')) cell.textContent = shown[cell.dataset.field]
  for (const name of PROFILE_FIELDS) $(`#profile-form [name=${name}]`).value = user[name] ?? ''
  $('#unverified').hidden = user.email_verified
}

async function loadSessions () {
  const answer = await authorized('GET', 'auth/sessions')
  if (answer.status === 200) renderSessions($('#sessions'), answer.body, endSession)
  else if (!sessionEnded(answer)) say($('#sessions-message'), explain(answer), 'error')
}

async function loadApps () {
  const answer = await authorized('GET', 'auth/apps')
  if (answer.status === 200) renderApps($('#apps'), answer.body.apps, revokeApp)
  else if (!sessionEnded(answer)) say($('#apps-message'), explain(answer), 'error')
}

async function revokeApp (app, button) {
  button.disabled = true
  const answer = await authorized('DELETE', `auth/apps/${encodeURIComponent(app.client_id)}`)
  button.disabled = false
  if (answer.status !== 204 && sessionEnded(answer)) return
  await Promise.all([loadApps(), loadEvents()])
  say($('#apps-message'), answer.status === 204 ? `${app.name} no longer has access.` : explain(answer), answer.status === 204 ? 'ok' : 'error')
  $('#apps-title').focus()
}

async function loadEvents () {
  const answer = await authorized('GET', 'auth/security-events?limit=20')
  if (answer.status === 200) renderEvents($('#events'), answer.body.events)
}

/** Reads the account; signed in, shows the console (and moves the focus to it when asked). */
async function showAccount ({ focus = false } = {}) {
  const answer = await authorized('GET', 'auth/account')
  if (answer.status !== 200) {
    showSignedOut({ focus, message: answer.status === 401 ? '' : explain(answer), kind: 'error' })
    return
  }
  stopPasskeyAutofill()
  user = answer.body
  fillProfile()
  showTwoStep(user.mfa)
  $('#signed-out').hidden = true
  $('#signed-in').hidden = false
  await Promise.all([loadSessions(), loadApps(), loadEvents(), loadPasskeys(), loadIdentities(() => showAccount())])
  if (focus) $('#signed-in-title').focus()
}

async function endSession (session, button) {
  button.disabled = true
  const answer = await authorized('DELETE', `auth/sessions/${encodeURIComponent(session.id)}`)
  button.disabled = false
  if (answer.status === 204 && session.current) return showSignedOut({ focus: true, message: 'You are signed out on this device.' })
  if (answer.status !== 204 && sessionEnded(answer)) return
  await Promise.all([loadSessions(), loadEvents()])
  say($('#sessions-message'), answer.status === 204 ? 'The session is ended: that device is signed out.' : explain(answer), answer.status === 204 ? 'ok' : 'error')
  $('#sessions-title').focus()
}

onSubmit($('#login-form'), async (form) => {
  const answer = await call('POST', 'auth/login', fieldsOf(form), { read: false })
  if (answer.status === 403 && answer.body?.code === 'MFA_REQUIRED') {
    form.reset()
    markInvalid(form, [])
    say(messageOf(form), '')
    return showCodeStep(answer.body.mfa_token)
  }
  if (answer.status !== 200) {
    markInvalid(form, answer.status === 401 ? ['email', 'password'] : [])
    return say(messageOf(form), explain(answer), 'error')
  }
  form.reset()
  markInvalid(form, [])
  say(messageOf(form), '')
  await showAccount({ focus: true })
})

onSubmit($('#mfa-form'), async (form) => {
  const { code = '' } = fieldsOf(form)
  const answer = await call('POST', 'auth/mfa/verify', { mfa_token: mfaToken, code: code.trim() }, { read: false })
  if (answer.status === 200) {
    showPasswordStep()
    return await showAccount({ focus: true })
  }
  if (answer.status === 401 && answer.body?.code !== 'INVALID_MFA_CODE') {
    // The mfa_token is used up, expired or void after wrong codes: the sign-in starts over.
    showPasswordStep()
    say(messageOf($('#login-form')), `${explain(answer)} Sign in again.`, 'error')
    startAutofill()
    return $('#login-email').focus()
  }
  markInvalid(form, answer.status === 401 || answer.status === 400 ? ['code'] : [])
  say(messageOf(form), answer.body?.code === 'INVALID_MFA_CODE' ? 'That code is not right (or was used already). Try the current one.' : explain(answer), 'error')
  $('#mfa-code').focus()
})

onClick($('#mfa-cancel'), async () => {
  showPasswordStep()
  $('#login-email').focus()
  startAutofill()
})

const passkeyLogin = $('#passkey-login')
passkeyLogin.hidden = !passkeysAvailable
onClick(passkeyLogin, async () => {
  const message = messageOf($('#login-form'))
  say(message, '')
  const { error } = await passkeySignIn({ read: false })
  if (error !== undefined) {
    say(message, error, 'error')
    // The modal request ended the autofill's: it waits again.
    return startAutofill()
  }
  await showAccount({ focus: true })
})

// "Email me a code": a sign-in, or (for an address with no account) a sign-up, with no password.
const emailCode = setUpEmailCode({
  read: false,
  leaving: stopPasskeyAutofill,
  back: startAutofill,
  mfaRequired: (token) => showCodeStep(token, MAILED_CODE_HINT),
  signedIn: async (answer) => {
    if (answer.status !== 201) return await showAccount({ focus: true })
    await showAccount()
    say(status, `Your account is created, and ${user?.email ?? 'your address'} is verified: the code proved it.`)
    // No password, ever: a passkey is the way to sign in next time without a mail.
    if (!passkeyCreationAvailable) return $('#signed-in-title').focus()
    $('#passkey-offer').hidden = false
    $('#passkey-offer-title').focus()
  }
})

onClick($('#passkey-offer-add'), async () => {
  say(messageOf($('#passkey-offer')), '')
  if (await addPasskey()) {
    $('#passkey-offer').hidden = true
    return
  }
  say(messageOf($('#passkey-offer')), $('#passkeys-message').textContent, 'error')
})

onClick($('#passkey-offer-later'), async () => {
  $('#passkey-offer').hidden = true
  $('#signed-in-title').focus()
})

onSubmit($('#register-form'), async (form) => {
  const answer = await call('POST', 'auth/register', fieldsOf(form))
  if (answer.status !== 201) return refuse(form, answer)
  form.reset()
  markInvalid(form, [])
  $('#register').open = false
  $('#login-email').value = answer.body.email
  say(status, `Your account is created. We mailed a link to ${answer.body.email} to verify the address. Sign in below.`)
  $('#login-password').focus()
})

onSubmit($('#forgot-form'), async (form) => {
  const answer = await call('POST', 'auth/forgot-password', fieldsOf(form))
  if (answer.status !== 202) return refuse(form, answer)
  say(messageOf(form), `${answer.body.message}.`)
})

onSubmit($('#profile-form'), async (form) => {
  const changes = {}
  for (const [name, value] of Object.entries(fieldsOf(form))) if (value.trim() !== (user[name] ?? '')) changes[name] = value
  if (Object.keys(changes).length === 0) return say(messageOf(form), 'Nothing to save: change a field first.', 'error')
  const answer = await authorized('PATCH', `users/${user.id}`, changes)
  if (answer.status !== 204) return refuse(form, answer)
  markInvalid(form, [])
  await showAccount()
  say(messageOf(form), 'The profile is saved.')
})

/** The email change's proof: the password, or (after "Email me a code instead") the mailed code in its place. */
function showEmailMailedCode (shown) {
  $('#email-mailed-code-field').hidden = !shown
  $('label[for=email-password]').hidden = shown
  $('#email-password').hidden = shown
  $('#email-email-code').textContent = shown ? 'Send a new code' : 'Email me a code instead'
}

onClick($('#email-email-code'), async () => {
  const message = messageOf($('#email-form'))
  const answer = await authorized('POST', 'auth/email-code', { email: user.email })
  if (answer.status !== 202) return sessionEnded(answer) || say(message, answer.status === 404 ? 'Mailed codes are turned off here: use your password.' : explain(answer), 'error')
  showEmailMailedCode(true)
  $('#email-mailed-code').value = ''
  markInvalid($('#email-form'), [])
  say(message, `We mailed a code to ${user.email}.`)
  $('#email-mailed-code').focus()
})

onSubmit($('#email-form'), async (form) => {
  const { email, password = '', code = '', email_code: emailCode = '' } = fieldsOf(form)
  const message = messageOf(form)
  if (!$('#reauth').hidden) {
    const byMail = !$('#email-mailed-code-field').hidden
    const proof = await authorized('POST', 'auth/reauthenticate', {
      ...(byMail ? { email_code: cleanCode(emailCode) } : { password }),
      ...(code.trim() === '' ? {} : { code: code.trim() })
    })
    if (proof.status === 400) {
      markInvalid(form, [byMail ? 'email_code' : 'password'])
      return say(message, byMail ? 'Type the six-digit code from the mail.' : 'Type your password to confirm the change.', 'error')
    }
    if (proof.status === 401 || proof.status === 403) {
      if (sessionEnded(proof)) return
      const { field, text } = reauthRefusal(proof)
      if (field === 'code') $('#email-code-field').hidden = false
      markInvalid(form, [field])
      say(message, text, 'error')
      return $(field === 'email_code' ? '#email-mailed-code' : `#email-${field}`).focus()
    }
    if (proof.status !== 204) return refuse(form, proof)
  }
  const answer = await authorized('PATCH', `users/${user.id}`, { email })
  if (answer.status === 403 && answer.body?.code === 'REAUTHENTICATION_REQUIRED') {
    $('#reauth').hidden = false
    markInvalid(form, [])
    say(message, 'Confirm your password to change the address.', 'error')
    return $('#email-password').focus()
  }
  if (answer.status !== 204) return refuse(form, answer)
  form.reset()
  markInvalid(form, [])
  $('#reauth').hidden = true
  showEmailMailedCode(false)
  await showAccount()
  say(message, `Your address is now ${user.email}. We mailed it a verification link; every other device is signed out.`)
})

onSubmit($('#password-form'), async (form) => {
  const answer = await authorized('POST', 'auth/change-password', fieldsOf(form))
  if (answer.status !== 204) return refuse(form, answer)
  form.reset()
  markInvalid(form, [])
  say(messageOf(form), 'The password is changed; every other device is signed out.')
  await Promise.all([loadSessions(), loadEvents()])
})

// The first password of an account that has none (POST /auth/password), through the confirmation prompt when the
// session is no longer fresh; an account with a password is told to change it above.
onSubmit($('#first-password-form'), async (form) => {
  const answer = await freshCall($('#password-title').parentElement, 'POST', 'auth/password', fieldsOf(form))
  if (answer === null) return say(messageOf(form), 'Cancelled: nothing was changed.', 'error')
  if (answer.status === 409 && answer.body?.code === 'PASSWORD_ALREADY_SET') {
    markInvalid(form, [])
    return say(messageOf(form), 'Your account has a password already: change it with the form above.', 'error')
  }
  if (answer.status !== 204) return refuse(form, answer)
  form.reset()
  markInvalid(form, [])
  say(messageOf(form), 'Your password is set: you can sign in with it too. Every other device is signed out.')
  await Promise.all([loadSessions(), loadEvents()])
})

onSubmit($('#delete-form'), async (form) => {
  const { password = '', confirm } = fieldsOf(form)
  if (confirm !== 'yes') {
    markInvalid(form, ['confirm'])
    return say(messageOf(form), 'Tick the box to confirm that the account should be deleted.', 'error')
  }
  // No password typed: the account has none (a mailed code, a provider or a passkey only), and a fresh session is its
  // proof; past REAUTH_MAX_AGE the confirmation prompt (a mailed code in place of the password) makes it fresh again.
  const answer = password === ''
    ? await freshCall($('#delete-title').parentElement, 'DELETE', `users/${user.id}`, {})
    : await authorized('DELETE', `users/${user.id}`, { password })
  if (answer === null) return say(messageOf(form), 'Cancelled: the account is kept.', 'error')
  if (answer.status !== 204) return refuse(form, answer)
  form.reset()
  showSignedOut({ focus: true, message: 'Your account is deleted. Goodbye.' })
})

onClick($('#sign-out'), async () => {
  await call('POST', 'auth/logout')
  showSignedOut({ focus: true, message: 'You are signed out.' })
})

onClick($('#resend'), async () => {
  const answer = await authorized('POST', 'auth/resend-verification')
  if (answer.status === 202) return say($('#resend-message'), `${answer.body.message}.`)
  if (!sessionEnded(answer)) say($('#resend-message'), explain(answer), 'error')
})

onClick($('#end-others'), async () => {
  const listed = await authorized('GET', 'auth/sessions')
  if (listed.status !== 200) return sessionEnded(listed) || say($('#sessions-message'), explain(listed), 'error')
  const others = listed.body.filter(session => !session.current)
  const answers = await Promise.all(others.map(session => authorized('DELETE', `auth/sessions/${encodeURIComponent(session.id)}`)))
  const ended = answers.filter(answer => answer.status === 204).length
  await Promise.all([loadSessions(), loadEvents()])
  say($('#sessions-message'), others.length === 0
    ? 'No other device is signed in.'
    : `Signed out ${ended} other ${ended === 1 ? 'device' : 'devices'}.`, ended === others.length ? 'ok' : 'error')
})

setUpSecurity({ ended: sessionEnded, changed: () => showAccount(), email: () => user?.email ?? '' })

/** The first view: the account, or the sign-in with what the mailed link or a provider's sign-in put in the fragment. */
async function start () {
  const mailedLink = takeCodeLink()
  const landing = takeSignInFragment()
  await loadProviders()
  await showAccount()
  if (!$('#signed-in').hidden) {
    if (mailedLink !== null) say(status, 'You are signed in already: the code from the mail is not needed.')
    return
  }
  if (mailedLink !== null) {
    // The mailed link fills the code in; pressing the button spends it (a mail scanner that opens the link spends nothing).
    $('#login-email').value = mailedLink.email
    return emailCode.open(mailedLink.email, mailedLink.code)
  }
  if (landing.mfaToken) return showCodeStep(landing.mfaToken, PROVIDER_HINT)
  if (landing.error) {
    say(status, landing.error, 'error')
    status.focus()
  }
}

start()

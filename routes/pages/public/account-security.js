// The console's two-step sign-in and passkeys: TOTP on and off (its QR code drawn here, from
// qrcode-generator served by this origin: no outside service sees the secret), recovery codes,
// and passkeys to add, rename and remove. Changes that need a recent password ask for it first.
import qrcode from './qrcode.js'
import { authorized, explain } from './api.js'
import { fieldsOf, markInvalid, messageOf, onClick, onSubmit, say, timeElement } from './forms.js'
import { passkeysAvailable, passkeyStepUp } from './passkey-sign-in.js'
import { cleanCode } from './email-code.js'

const $ = (selector) => document.querySelector(selector)
const SVG = 'http://www.w3.org/2000/svg'
let sessionEnded = () => false
let onChange = async () => {}
let signedInEmail = () => ''

// ---- The password (and, with TOTP, a code), asked for when the service answers 403 REAUTHENTICATION_REQUIRED ----

const reauthForm = $('#security-reauth')
let waiting = null

function finishReauth (confirmed) {
  reauthForm.reset()
  showMailedCode(false)
  markInvalid(reauthForm, [])
  say(messageOf(reauthForm), '')
  reauthForm.hidden = true
  const resolve = waiting
  waiting = null
  resolve?.(confirmed)
}

/** Shows the password form at the end of `place` (the section that asked), the focus on it; true once confirmed. */
function askPassword (place) {
  finishReauth(false)
  place.append(reauthForm)
  reauthForm.hidden = false
  $('#security-password').focus()
  return new Promise(resolve => { waiting = resolve })
}

/** Why a re-authentication was refused, and which field to blame: the password, or (with TOTP) the code. */
export function reauthRefusal (proof) {
  const code = proof.body?.code
  if (code === 'MFA_REQUIRED') return { field: 'code', text: 'Type the code your authenticator app shows (or a recovery code) too.' }
  if (code === 'INVALID_MFA_CODE') return { field: 'code', text: 'That code is not right (or was used already). Try the current one.' }
  if (code === 'INVALID_CODE') return { field: 'email_code', text: 'That code from the mail is not right, has expired or was used. Check the newest mail, or send a new code.' }
  return { field: 'password', text: proof.status === 400 ? 'Type your password to confirm.' : explain(proof) }
}

/** The mailed code in place of the password (an account without one, or a person who forgot it), or the password again. */
function showMailedCode (shown) {
  $('#security-mailed-code-field').hidden = !shown
  $('label[for=security-password]').hidden = shown
  $('#security-password').hidden = shown
  $('#security-email-code').textContent = shown ? 'Send a new code' : 'Email me a code instead'
}

// The input of each field a refusal blames.
const REAUTH_INPUTS = { password: '#security-password', code: '#security-code', email_code: '#security-mailed-code' }

onSubmit(reauthForm, async (form) => {
  // An empty field is left out: only an account with TOTP needs a code; the mailed code stands in for the password.
  const { password, code, email_code: emailCode } = fieldsOf(form, { skipEmpty: true })
  const proofBody = $('#security-mailed-code-field').hidden
    ? { password: password ?? '' }
    : { email_code: cleanCode(emailCode ?? '') }
  if (code !== undefined) proofBody.code = code.trim()
  const proof = await authorized('POST', 'auth/reauthenticate', proofBody)
  if (proof.status === 204) return finishReauth(true)
  if (sessionEnded(proof)) return finishReauth(false)
  const { field, text } = reauthRefusal(proof)
  const blamed = field === 'password' && proofBody.email_code !== undefined ? 'email_code' : field
  if (blamed === 'code') $('#security-code-field').hidden = false
  markInvalid(form, [blamed])
  say(messageOf(form), blamed === 'email_code' && field === 'password' && proof.status === 400 ? 'Type the six-digit code from the mail.' : text, 'error')
  $(REAUTH_INPUTS[blamed]).focus()
})

onClick($('#security-email-code'), async () => {
  const answer = await authorized('POST', 'auth/email-code', { email: signedInEmail() })
  if (answer.status !== 202) {
    if (!sessionEnded(answer)) say(messageOf(reauthForm), answer.status === 404 ? 'Mailed codes are turned off here: use your password.' : explain(answer), 'error')
    return
  }
  showMailedCode(true)
  $('#security-mailed-code').value = ''
  markInvalid(reauthForm, [])
  say(messageOf(reauthForm), `We mailed a code to ${signedInEmail()}.`)
  $('#security-mailed-code').focus()
})

onClick($('#security-reauth-cancel'), async () => finishReauth(false))

/**
 * A signed-in call that may need a recent password: on 403 REAUTHENTICATION_REQUIRED the password is asked
 * for in `place`, confirmed (POST /auth/reauthenticate), and the call made again; on 403 SECOND_FACTOR_REQUIRED
 * a passkey is asked for (POST /auth/passkeys/reauthenticate), and the call made again. Null when the person cancels.
 */
export async function freshCall (place, method, path, data) {
  let answer = await authorized(method, path, data)
  if (answer.status === 403 && answer.body?.code === 'REAUTHENTICATION_REQUIRED') {
    if (!(await askPassword(place))) return null
    answer = await authorized(method, path, data)
  }
  // A second factor to add on an account that has one: the session must have used one. A passkey confirms it here;
  // otherwise the refusal says to sign in again with the second factor.
  if (answer.status === 403 && answer.body?.code === 'SECOND_FACTOR_REQUIRED' && passkeysAvailable) {
    const { error } = await passkeyStepUp()
    if (error !== undefined) return answer
    answer = await authorized(method, path, data)
  }
  return answer
}

/** Shows a refusal in `message` (nothing for a cancelled password prompt, the sign-in form for an ended session). */
export function refused (message, answer) {
  if (answer === null) return say(message, 'Cancelled: nothing was changed.', 'error')
  if (!sessionEnded(answer)) say(message, explain(answer), 'error')
}

// ---- TOTP ----

const twoStep = $('#two-step-title').parentElement
const twoStepMessage = $('#two-step-message')

/** The QR code of `text` as an SVG of squares (attributes only: the page CSP allows no inline style). */
function drawQr (container, text) {
  const qr = qrcode(0, 'M')
  qr.addData(text)
  qr.make()
  const count = qr.getModuleCount()
  const size = count + 8 // a quiet zone of four modules around it
  let path = ''
  for (let row = 0; row < count; row += 1) {
    for (let column = 0; column < count; column += 1) if (qr.isDark(row, column)) path += `M${column + 4} ${row + 4}h1v1h-1z`
  }
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`)
  svg.setAttribute('role', 'img')
  svg.setAttribute('aria-label', 'QR code of the authenticator key (the same key is written below)')
  svg.setAttribute('shape-rendering', 'crispEdges')
  const background = document.createElementNS(SVG, 'rect')
  for (const [name, value] of [['width', size], ['height', size], ['fill', '#fff']]) background.setAttribute(name, String(value))
  const modules = document.createElementNS(SVG, 'path')
  modules.setAttribute('d', path)
  modules.setAttribute('fill', '#000')
  svg.append(background, modules)
  container.replaceChildren(svg)
}

function showRecoveryCodes (codes) {
  $('#recovery-codes').replaceChildren(...codes.map((code) => {
    const item = document.createElement('li')
    item.textContent = code
    return item
  }))
  $('#recovery-box').hidden = false
  $('#recovery-title').focus()
}

/** The two-step status of GET /auth/account's `mfa`. */
export function showTwoStep (mfa) {
  const parts = [mfa.totp
    ? `The authenticator app is on; ${mfa.recovery_codes_left} recovery ${mfa.recovery_codes_left === 1 ? 'code' : 'codes'} left.`
    : 'The authenticator app is off.']
  parts.push(mfa.passkeys ? 'You have a passkey.' : 'You have no passkey yet.')
  $('#two-step-status').textContent = parts.join(' ')
  // With TOTP on, confirming a change takes a code beside the password.
  $('#security-code-field').hidden = !mfa.totp
  $('#email-code-field').hidden = !mfa.totp
  $('#totp-off-actions').hidden = mfa.totp
  $('#totp-on-actions').hidden = !mfa.totp
  if (mfa.totp) $('#totp-setup').hidden = true
}

/** Forgets what a previous visitor of this page saw (a secret, recovery codes). */
export function resetSecurity () {
  finishReauth(false)
  $('#totp-setup').hidden = true
  $('#totp-secret').textContent = ''
  $('#totp-qr').replaceChildren()
  $('#recovery-box').hidden = true
  $('#recovery-codes').replaceChildren()
  $('#passkeys').replaceChildren()
  for (const message of [twoStepMessage, $('#passkeys-message')]) say(message, '')
}

onClick($('#totp-on'), async () => {
  say(twoStepMessage, '')
  $('#recovery-box').hidden = true
  const answer = await freshCall(twoStep, 'POST', 'auth/mfa/totp')
  if (answer?.status !== 200) return refused(twoStepMessage, answer)
  drawQr($('#totp-qr'), answer.body.otpauth_url)
  $('#totp-secret').textContent = answer.body.secret
  $('#totp-setup').hidden = false
  $('#totp-setup-title').focus()
})

onSubmit($('#totp-setup'), async (form) => {
  const message = messageOf(form)
  const answer = await freshCall(twoStep, 'POST', 'auth/mfa/totp/confirm', { code: fieldsOf(form).code?.trim() ?? '' })
  if (answer?.status !== 200) {
    if (answer !== null) markInvalid(form, ['code'])
    return refused(message, answer)
  }
  form.reset()
  markInvalid(form, [])
  say(message, '')
  form.hidden = true
  await onChange()
  say(twoStepMessage, 'The authenticator app is on: a sign-in now asks for its code.')
  showRecoveryCodes(answer.body.recovery_codes)
})

onClick($('#totp-off'), async () => {
  const answer = await freshCall(twoStep, 'DELETE', 'auth/mfa/totp')
  if (answer?.status !== 204) return refused(twoStepMessage, answer)
  $('#recovery-box').hidden = true
  await onChange()
  say(twoStepMessage, 'The authenticator app is off, its recovery codes void.')
  $('#two-step-title').focus()
})

onClick($('#recovery-new'), async () => {
  const answer = await freshCall(twoStep, 'POST', 'auth/mfa/recovery-codes')
  if (answer?.status !== 200) return refused(twoStepMessage, answer)
  await onChange()
  say(twoStepMessage, 'New recovery codes: the old ones no longer work.')
  showRecoveryCodes(answer.body.recovery_codes)
})

// ---- Passkeys ----

const passkeysSection = $('#passkeys-title').parentElement
const passkeysMessage = $('#passkeys-message')
const canCreate = typeof window.PublicKeyCredential?.parseCreationOptionsFromJSON === 'function'

function passkeyItem (passkey) {
  const item = document.createElement('li')
  item.dataset.passkey = passkey.id
  const title = document.createElement('p')
  const name = document.createElement('strong')
  name.textContent = passkey.name
  title.append(name)
  const used = document.createElement('p')
  used.className = 'agent'
  used.append('Added ', timeElement(passkey.created_at), ' · ',
    ...(passkey.last_used_at === null ? ['not used yet'] : ['last used ', timeElement(passkey.last_used_at)]))

  const form = document.createElement('form')
  form.method = 'post'
  form.noValidate = true
  form.className = 'item-actions'
  const field = document.createElement('div')
  const label = document.createElement('label')
  const input = document.createElement('input')
  input.id = `passkey-rename-${passkey.id}`
  input.name = 'name'
  input.maxLength = 100
  input.value = passkey.name
  label.htmlFor = input.id
  label.textContent = `New name for "${passkey.name}"`
  field.append(label, input)
  const save = document.createElement('button')
  save.type = 'submit'
  save.className = 'secondary'
  save.textContent = 'Rename'
  const remove = document.createElement('button')
  remove.type = 'button'
  remove.className = 'danger'
  remove.textContent = 'Remove'
  remove.setAttribute('aria-label', `Remove the passkey "${passkey.name}"`)
  form.append(field, save, remove)

  onSubmit(form, async () => {
    const answer = await freshCall(passkeysSection, 'PATCH', `auth/passkeys/${encodeURIComponent(passkey.id)}`, { name: input.value.trim() })
    if (answer?.status !== 200) {
      if (answer?.status === 400) input.setAttribute('aria-invalid', 'true')
      return refused(passkeysMessage, answer)
    }
    await loadPasskeys()
    say(passkeysMessage, `The passkey is now called "${answer.body.name}".`)
    $('#passkeys-title').focus()
  })
  remove.addEventListener('click', async () => {
    remove.disabled = true
    const answer = await freshCall(passkeysSection, 'DELETE', `auth/passkeys/${encodeURIComponent(passkey.id)}`)
    remove.disabled = false
    if (answer?.status !== 204) return refused(passkeysMessage, answer)
    await onChange()
    say(passkeysMessage, `The passkey "${passkey.name}" is removed: it no longer signs you in.`)
    $('#passkeys-title').focus()
  })
  item.append(title, used, form)
  return item
}

export async function loadPasskeys () {
  const answer = await authorized('GET', 'auth/passkeys')
  if (answer.status !== 200) return refused(passkeysMessage, answer)
  const { passkeys } = answer.body
  if (passkeys.length === 0) {
    const none = document.createElement('li')
    none.textContent = 'No passkey yet.'
    $('#passkeys').replaceChildren(none)
  } else {
    $('#passkeys').replaceChildren(...passkeys.map(passkeyItem))
  }
}

/**
 * Adds a passkey (named `name`, or by the service's default): the service's options, the authenticator's new
 * credential, POST auth/passkeys; the outcome shown in the Passkeys section. True once added.
 */
export async function addPasskey (name) {
  if (!canCreate) {
    say(passkeysMessage, 'This browser cannot create passkeys.', 'error')
    return false
  }
  say(passkeysMessage, '')
  const options = await freshCall(passkeysSection, 'POST', 'auth/passkeys/registration-options')
  if (options?.status !== 200) {
    refused(passkeysMessage, options)
    return false
  }
  let credential
  try {
    credential = await navigator.credentials.create({ publicKey: window.PublicKeyCredential.parseCreationOptionsFromJSON(options.body) })
  } catch (error) {
    say(passkeysMessage, error?.name === 'InvalidStateError'
      ? 'This device holds a passkey for your account already.'
      : 'No passkey was created (cancelled, or the device refused).', 'error')
    return false
  }
  const answer = await freshCall(passkeysSection, 'POST', 'auth/passkeys', { ...credential.toJSON(), ...(name ? { name } : {}) })
  if (answer?.status !== 201) {
    refused(passkeysMessage, answer)
    return false
  }
  await onChange()
  say(passkeysMessage, `The passkey "${answer.body.name}" is added: you can sign in with it.`)
  $('#passkeys-title').focus()
  return true
}

/** Whether this browser can create a passkey (the console offers one after a sign-up without a password). */
export const passkeyCreationAvailable = canCreate

onSubmit($('#passkey-add-form'), async (form) => {
  if (await addPasskey(fieldsOf(form).name?.trim())) form.reset()
})

/**
 * Wires the section to the console: `ended(answer)` shows the sign-in form when a call found the session
 * ended; `changed()` reads the account again (the status, the passkeys) after a change; `email()` is the
 * signed-in account's address (where the re-authentication's mailed code goes).
 */
export function setUpSecurity ({ ended, changed, email }) {
  sessionEnded = ended
  onChange = changed
  signedInEmail = email
  if (!canCreate) say(passkeysMessage, 'This browser cannot create passkeys; you can still add one from another browser.', 'error')
}

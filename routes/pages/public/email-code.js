// "Email me a code", shared by the account console and the apps' sign-in page: the address typed in the sign-in
// form gets a six-digit code (POST auth/email-code), the code step sends it back (POST auth/email-code/verify).
// An address with no account gets the sign-up fields the service names (no password: the code proves the
// address), and the same code creates the account. A code rather than a bare link: a sign-in started on a
// phone finishes on a laptop, and the mailed link only fills the code in here (the person still presses the button).
import { blamedFields, call, explain } from './api.js'
import { markInvalid, messageOf, onClick, onSubmit, say } from './forms.js'

const $ = (selector) => document.querySelector(selector)
const SIGN_UP_FIELDS = ['first_name', 'last_name', 'username']

/** A typed or pasted code as the service takes it: the spaces and dashes a mail client or a person adds taken out. */
export function cleanCode (text) {
  return String(text).replace(/[\s\u00a0-]/g, '')
}

/**
 * The registration fields a verify's 400 names as missing (an address with no account): from a `fields` list
 * when the answer has one, else from the fields its message names. Empty for any other refusal.
 */
export function missingSignUpFields (answer) {
  if (answer.status !== 400) return []
  const listed = [answer.body?.fields, answer.body?.missing_fields].find(Array.isArray) ?? []
  const message = answer.body?.message ?? ''
  return SIGN_UP_FIELDS.filter(name => listed.includes(name) || new RegExp(`\\b${name}\\b`).test(message))
}

/**
 * The mailed link's fragment (#email_code=…&email=…), taken out of the address bar and the history at once:
 * `{ code, email }`, or null when the page was opened otherwise (or the link lacks either). A second link opened in the same tab
 * changes only the fragment, which loads nothing: the page starts over with it.
 */
export function takeCodeLink () {
  window.addEventListener('hashchange', () => { if (/(^#|&)email_code=/.test(window.location.hash)) window.location.reload() })
  const values = new URLSearchParams(window.location.hash.slice(1))
  if (!values.has('email_code')) return null
  window.history.replaceState(null, '', window.location.pathname + window.location.search)
  const code = cleanCode(values.get('email_code'))
  if (!/^\d{6}$/.test(code)) return null
  const email = (values.get('email') ?? '').trim()
  return email !== '' && email.length <= 320 ? { code, email } : null
}

/**
 * Wires the "Email me a code" button of the sign-in form (#email-code-start) and the code step
 * (#mailed-code-form). `read`: whether the verify's answer body is read (the apps' page of the header
 * variant needs its access token; the console leaves it unread). `signedIn(answer)` finishes the sign-in
 * (answer.status 201: an account was created), `mfaRequired(mfaToken)` opens the page's second-factor step,
 * `leaving()` is told when the code step opens (the page stops its passkey autofill), `back()` when the
 * person goes back to the sign-in form.
 */
export function setUpEmailCode ({ read, signedIn, mfaRequired, leaving = () => {}, back = () => {} }) {
  const loginForm = $('#login-form')
  const emailInput = $('#login-email')
  const form = $('#mailed-code-form')
  const codeInput = $('#mailed-code')
  const signUp = $('#mailed-code-signup')
  const submit = form.querySelector('button[type=submit]')
  const submitText = submit.textContent
  const message = messageOf(form)
  let email = ''

  /** The sign-up fields shown (those the service asked for), or none. */
  function showSignUp (names) {
    for (const field of signUp.querySelectorAll('[data-signup]')) {
      const wanted = names.includes(field.dataset.signup)
      field.hidden = !wanted
      field.querySelector('input').required = wanted
    }
    signUp.hidden = names.length === 0
    submit.textContent = names.length === 0 ? submitText : 'Create the account'
  }

  /** The code step for `address`, a code (from the mailed link) filled in or not. */
  function open (address, code = '') {
    email = address
    leaving()
    form.reset()
    showSignUp([])
    markInvalid(form, [])
    say(message, '')
    for (const element of form.querySelectorAll('[data-field=code-email]')) element.textContent = address
    codeInput.value = code
    loginForm.hidden = true
    form.hidden = false
    // From the mailed link the code is in: the button is what is left to press.
    if (code === '') codeInput.focus()
    else submit.focus()
  }

  /** Back to the sign-in form, the code step emptied. */
  function close () {
    email = ''
    form.reset()
    showSignUp([])
    markInvalid(form, [])
    say(message, '')
    form.hidden = true
  }

  /** Asks the service to mail a code to `address`: true when it took the request (202, for every address). */
  async function mail (address, where) {
    const answer = await call('POST', 'auth/email-code', { email: address })
    if (answer.status === 202) return true
    say(where, answer.status === 404 ? 'Signing in with a mailed code is turned off here.' : explain(answer), 'error')
    return false
  }

  onClick($('#email-code-start'), async () => {
    const loginMessage = messageOf(loginForm)
    const address = emailInput.value.trim()
    if (address === '' || !emailInput.checkValidity()) {
      markInvalid(loginForm, ['email'])
      say(loginMessage, 'Type your email address first: the code is mailed there.', 'error')
      return emailInput.focus()
    }
    markInvalid(loginForm, [])
    say(loginMessage, '')
    if (await mail(address, loginMessage)) open(address)
  })

  onSubmit(form, async () => {
    const code = cleanCode(codeInput.value)
    if (!/^\d{6}$/.test(code)) {
      markInvalid(form, ['code'])
      say(message, 'The code from the mail has six digits.', 'error')
      return codeInput.focus()
    }
    const registration = {}
    if (!signUp.hidden) {
      for (const input of signUp.querySelectorAll('[data-signup]:not([hidden]) input')) registration[input.name] = input.value.trim()
    }
    const answer = await call('POST', 'auth/email-code/verify', { email, code, ...registration }, { read })
    if (answer.status === 200 || answer.status === 201) return await signedIn(answer)
    if (answer.status === 403 && answer.body?.code === 'MFA_REQUIRED') {
      const mfaToken = answer.body.mfa_token
      close()
      return mfaRequired(mfaToken)
    }
    if (answer.status === 401) {
      markInvalid(form, ['code'])
      say(message, 'That code is not right, has expired or was used. Check the newest mail, or send a new code.', 'error')
      return codeInput.focus()
    }
    const missing = missingSignUpFields(answer)
    if (signUp.hidden && missing.length > 0) {
      // No account has this address: the service names what it needs to create one, and the code is not spent.
      showSignUp(missing)
      markInvalid(form, [])
      say(message, `No account uses ${email} yet. To create one, fill in the fields above: no password is needed, the code proves the address.`)
      return signUp.querySelector('[data-signup]:not([hidden]) input').focus()
    }
    const blamed = [...blamedFields(answer), ...missing]
    markInvalid(form, blamed)
    say(message, explain(answer), 'error')
    form.querySelector(blamed.map(name => `input[name=${name}]`).join(', ') || '#mailed-code')?.focus()
  })

  onClick($('#mailed-code-resend'), async () => {
    if (!(await mail(email, message))) return
    codeInput.value = ''
    markInvalid(form, [])
    say(message, `A new code is on its way to ${email}; the one before no longer works.`)
    codeInput.focus()
  })

  onClick($('#mailed-code-cancel'), async () => {
    close()
    loginForm.hidden = false
    emailInput.focus()
    back()
  })

  return { open, close }
}

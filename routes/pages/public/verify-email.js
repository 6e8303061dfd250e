// /verify-email#token=…: verifies only when the person presses the button, by a POST of the
// token from the fragment. A GET of the link (a mail scanner, a link preview) verifies nothing.
import { CONSOLE, authorized, call, explain } from './api.js'
import { onClick, say, takeFragmentToken } from './forms.js'

const $ = (selector) => document.querySelector(selector)
const token = takeFragmentToken()

for (const element of document.querySelectorAll(CONSOLE === '' ? '.app-only' : '.console-only')) element.hidden = false

function show (section, heading) {
  for (const candidate of ['#confirm', '#verified', '#again']) $(candidate).hidden = candidate !== section
  $(heading).focus()
}

function cannotUse (reason) {
  $('#again-reason').textContent = reason
  show('#again', '#again-title')
}

onClick($('#verify'), async () => {
  const answer = await call('POST', 'auth/verify-email', { token })
  if (answer.status === 204) return show('#verified', '#verified-title')
  const code = answer.body?.code
  if (code === 'VERIFICATION_TOKEN_EXPIRED') return cannotUse('This link has expired.')
  if (code === 'INVALID_VERIFICATION_TOKEN') return cannotUse('This link has been used already, a newer one was sent, or the address of the account has changed since.')
  say($('#verify-message'), explain(answer), 'error')
})

onClick($('#resend'), async () => {
  const answer = await authorized('POST', 'auth/resend-verification')
  const message = $('#again-message')
  if (answer.status === 202) return say(message, `${answer.body.message}.`)
  if (answer.status === 401) return say(message, 'You are not signed in on this browser. Sign in to your account to ask for a new link.', 'error')
  say(message, explain(answer), 'error')
})

if (token === null) cannotUse('The link is incomplete. Open it from the mail again.')
else $('#confirm').hidden = false

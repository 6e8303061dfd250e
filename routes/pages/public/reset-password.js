// /reset-password#token=…: the mailed token is taken from the fragment (never sent to a server
// by the browser on its own) and POSTed with the new password to the API's reset route.
import { CONSOLE, call, explain } from './api.js'
import { fieldsOf, markInvalid, messageOf, onSubmit, say, takeFragmentToken } from './forms.js'

const $ = (selector) => document.querySelector(selector)
const token = takeFragmentToken()
const resetForm = $('#reset-form')
const againForm = $('#again-form')

/** The link cannot be used (missing, spent, expired): offer a new one, which needs no sign-in. */
function offerNewLink (reason) {
  resetForm.hidden = true
  againForm.hidden = false
  $('#again-reason').textContent = reason
  $('#again-title').focus()
}

onSubmit(resetForm, async (form) => {
  const { new_password: newPassword, repeat } = fieldsOf(form)
  const message = messageOf(form)
  if (newPassword !== repeat) {
    markInvalid(form, ['repeat'])
    return say(message, 'The two passwords differ. Type the same password twice.', 'error')
  }
  const answer = await call('POST', 'auth/reset-password', { token, new_password: newPassword })
  if (answer.status === 204) {
    form.hidden = true
    $('#done').hidden = false
    $(CONSOLE === '' ? '#sign-in-app' : '#sign-in-link').hidden = false
    $('#done-title').focus()
    return
  }
  const code = answer.body?.code
  if (code === 'INVALID_RESET_TOKEN') return offerNewLink('This link has been used already, or a newer one was sent. Ask for a new link below.')
  if (code === 'RESET_TOKEN_EXPIRED') return offerNewLink('This link has expired. Ask for a new link below.')
  markInvalid(form, answer.status === 400 ? ['new_password'] : [])
  say(message, explain(answer), 'error')
  $('#new-password').focus()
})

onSubmit(againForm, async (form) => {
  const answer = await call('POST', 'auth/forgot-password', fieldsOf(form))
  if (answer.status === 202) return say(messageOf(form), `${answer.body.message}. Open the newest mail's link.`)
  markInvalid(form, answer.status === 400 ? ['email'] : [])
  say(messageOf(form), explain(answer), 'error')
})

if (token === null) offerNewLink('This link is incomplete. Open the link from the mail again, or ask for a new one below.')
else resetForm.hidden = false

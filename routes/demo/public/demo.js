// The cookie variant from a browser. Every call goes to this origin with the
// HttpOnly cookies the browser keeps; no token is read, stored or sent by this
// script. Only the user id (not a secret) is kept, to show the profile again
// after a reload.
'use strict'

const api = new URL('../', document.baseURI) // the mount the page is served under
const $ = (selector) => document.querySelector(selector)
const USER_ID = 'account-service-demo-user-id'

function say (message, kind = 'ok') {
  const status = $('#status')
  status.textContent = message
  status.className = kind
}

async function call (method, path, body) {
  const response = await fetch(new URL(path, api), {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) }
}

/** A call that renews the access cookie once when it has expired. */
async function authorized (method, path, body) {
  let answer = await call(method, path, body)
  if (answer.status === 401 && answer.body?.code === 'TOKEN_EXPIRED') {
    if ((await call('POST', 'auth/refresh-token')).status === 200) answer = await call(method, path, body)
  }
  return answer
}

function problem (answer) {
  return answer.body?.code ? `${answer.body.code}: ${answer.body.message}` : `HTTP ${answer.status}`
}

function fieldsOf (form, { skipEmpty = false } = {}) {
  const fields = {}
  for (const [name, value] of new FormData(form)) {
    if (!(skipEmpty && value.trim() === '')) fields[name] = value
  }
  return fields
}

function showSignedIn (user) {
  sessionStorage.setItem(USER_ID, String(user.id))
  for (const cell of document.querySelectorAll('#profile [data-field]')) cell.textContent = user[cell.dataset.field] ?? '—'
  $('#signed-in').hidden = false
  $('#signed-out').hidden = true
}

function showSignedOut () {
  sessionStorage.removeItem(USER_ID)
  $('#signed-in').hidden = true
  $('#signed-out').hidden = false
}

async function loadProfile (id) {
  const answer = await authorized('GET', `users/${id}`)
  if (answer.status === 200) showSignedIn(answer.body)
  else showSignedOut()
  return answer
}

$('#register-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const answer = await call('POST', 'auth/register', fieldsOf(event.target))
  if (answer.status !== 201) return say(`Registration failed: ${problem(answer)}`, 'error')
  $('#login-form [name=email]').value = answer.body.email
  event.target.reset()
  say(`Registered ${answer.body.email} as user ${answer.body.id}. Log in below.`)
})

$('#login-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const answer = await call('POST', 'auth/login', fieldsOf(event.target))
  if (answer.status !== 200) return say(`Login failed: ${problem(answer)}`, 'error')
  // The body also holds the access token; the page ignores it and relies on the cookie.
  event.target.reset()
  showSignedIn(answer.body.user)
  say(`Logged in as ${answer.body.user.email}.`)
})

$('#edit-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const changes = fieldsOf(event.target, { skipEmpty: true })
  if (Object.keys(changes).length === 0) return say('Nothing to change: fill in a field.', 'error')
  const id = sessionStorage.getItem(USER_ID)
  const answer = await authorized('PATCH', `users/${id}`, changes)
  if (answer.status !== 204) return say(`Update failed: ${problem(answer)}`, 'error')
  event.target.reset()
  await loadProfile(id)
  say('Profile updated.')
})

$('#refresh').addEventListener('click', async () => {
  const answer = await call('POST', 'auth/refresh-token')
  if (answer.status !== 200) {
    showSignedOut()
    return say(`Refresh failed: ${problem(answer)}`, 'error')
  }
  say('Access token renewed (both cookies replaced).')
})

$('#logout').addEventListener('click', async () => {
  const answer = await call('POST', 'auth/logout')
  showSignedOut()
  say(answer.status === 204 ? 'Logged out.' : `Logout failed: ${problem(answer)}`, answer.status === 204 ? 'ok' : 'error')
})

const remembered = sessionStorage.getItem(USER_ID)
if (remembered !== null) loadProfile(remembered)

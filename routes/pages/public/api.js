// Calls to the service's API from the pages. Everything goes to this origin; in the
// cookie variant the browser adds the HttpOnly cookies itself. No token is ever read,
// kept or sent by this script: answers that carry one (login, refresh) are not even read.

/** The API prefix ('/' or e.g. '/v2/') and the account console's address ('' without one), written in by the server. */
export const API = document.body.dataset.api ?? '/'
export const CONSOLE = document.body.dataset.console ?? ''

const OFFLINE = { code: 'NETWORK', message: 'The service could not be reached. Check your connection and try again.' }

/**
 * One API call: { status, body, retryAfter }. With `read: false` the body is
 * left unread (a login's answer holds an access token this page has no use for).
 */
export async function call (method, path, data, { read = true } = {}) {
  let response
  try {
    response = await fetch(API + path, {
      method,
      credentials: 'same-origin',
      cache: 'no-store',
      headers: data === undefined ? {} : { 'content-type': 'application/json' },
      body: data === undefined ? undefined : JSON.stringify(data)
    })
  } catch {
    return { status: 0, body: OFFLINE, retryAfter: null }
  }
  let body
  if (read || !response.ok) {
    const text = await response.text()
    try { body = text === '' ? undefined : JSON.parse(text) } catch { body = undefined }
  } else {
    await response.body?.cancel()
  }
  return { status: response.status, body, retryAfter: response.headers.get('retry-after') }
}

let refreshing = null

/** Renews the access cookie with the refresh cookie, once for every call that finds it gone at the same moment. */
function refresh () {
  refreshing ??= call('POST', 'auth/refresh-token', undefined, { read: false }).finally(() => { refreshing = null })
  return refreshing
}

/**
 * A call of a signed-in route (cookie variant). An access cookie that expired (the
 * browser drops it at its Max-Age) or whose token expired is renewed once, then the call repeated.
 */
export async function authorized (method, path, data) {
  const answer = await call(method, path, data)
  if (answer.status !== 401 || !['MISSING_TOKEN', 'TOKEN_EXPIRED'].includes(answer.body?.code)) return answer
  if ((await refresh()).status !== 200) return answer
  return call(method, path, data)
}

// The inputs a refusal is about, by its code (the policy's PASSWORD_TOO_COMMON names no field).
const BLAMED = {
  EMAIL_TAKEN: ['email'],
  USERNAME_TAKEN: ['username'],
  PASSWORD_TOO_COMMON: ['password', 'new_password'],
  INVALID_CREDENTIALS: ['password', 'current_password']
}

/** The names of the inputs a refusal is about: by its code, or the field a schema message names ("body/email must …"). */
export function blamedFields (answer) {
  const code = answer.body?.code
  const message = answer.body?.message ?? ''
  if (BLAMED[code]) return BLAMED[code]
  const named = /^body\/(\w+)/.exec(message)
  if (named) return [named[1]]
  if (code === 'VALIDATION_FAILED' && /password/.test(message)) return ['password', 'new_password']
  return []
}

/**
 * What to tell a person about a refusal: the service's own message, put
 * plainly for the password policy's answers (too short, too long) and for limits.
 */
export function explain (answer) {
  const code = answer.body?.code
  const message = answer.body?.message ?? ''
  if (answer.status === 429) return `Too many attempts. Try again in ${answer.retryAfter ?? 'a few'} seconds.`
  if (code === 'VALIDATION_FAILED' && /password/.test(message)) {
    const shortBy = /fewer than (\d+)/.exec(message)
    if (shortBy) return `Too short: a password needs at least ${shortBy[1]} characters.`
    const longBy = /more than (\d+)/.exec(message)
    if (longBy) return `Too long: a password has at most ${longBy[1]} characters.`
    const range = /must be (\d+) to (\d+) characters/.exec(message)
    if (range) return `A password needs ${range[1]} to ${range[2]} characters.`
  }
  if (message !== '') return message
  return `Something went wrong (HTTP ${answer.status}). Try again.`
}

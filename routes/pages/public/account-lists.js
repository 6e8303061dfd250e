// The console's two lists, sessions and security activity, built with textContent only:
// a user agent is whatever a client sent, so it never becomes markup.
import { timeElement } from './forms.js'

const EVENT_LABELS = {
  login: 'Signed in',
  login_failed: 'Failed sign-in (wrong password)',
  account_locked: 'Sign-in locked for a while after wrong passwords',
  password_changed: 'Password changed',
  password_reset: 'Password reset through a mailed link',
  email_changed: 'Email address changed',
  session_revoked: 'Session ended',
  refresh_token_reused: 'A stolen or replayed sign-in was refused; its session was ended',
  reauthenticated: 'Identity confirmed (password, code or passkey)',
  identity_linked: 'Sign-in provider linked',
  identity_unlinked: 'Sign-in provider unlinked',
  passkey_added: 'Passkey added',
  passkey_removed: 'Passkey removed',
  passkey_login: 'Signed in with a passkey',
  passkey_counter_regressed: 'A passkey that looks copied was refused',
  mfa_enabled: 'Authenticator app turned on',
  mfa_disabled: 'Authenticator app turned off',
  mfa_failed: 'Failed sign-in (wrong code)',
  recovery_code_used: 'Signed in with a recovery code',
  recovery_codes_renewed: 'New recovery codes',
  oauth_consent_granted: 'An app was allowed access',
  oauth_consent_revoked: 'An app\'s access was revoked',
  'org.created': 'Organisation created',
  'org.deleted': 'Organisation deleted',
  'org.member_added': 'Joined an organisation',
  'org.member_removed': 'Left or removed from an organisation',
  'org.member_role_changed': 'Role in an organisation changed'
}

/** "Chrome on Linux" from a user agent; else its first word ("curl", "OtherApp"): the full agent is shown below it. */
export function describeAgent (agent) {
  if (!agent) return 'Unknown device'
  const browser = [[/Edg\//, 'Edge'], [/Firefox\//, 'Firefox'], [/Chrom(e|ium)\//, 'Chrome'], [/Safari\//, 'Safari'], [/^curl\//, 'curl']]
    .find(([pattern]) => pattern.test(agent))?.[1]
  const system = [[/Android/, 'Android'], [/iPhone|iPad/, 'iOS'], [/Windows/, 'Windows'], [/Mac OS X/, 'macOS'], [/Linux/, 'Linux']]
    .find(([pattern]) => pattern.test(agent))?.[1]
  if (browser && system) return `${browser} on ${system}`
  return browser ?? system ?? (agent.split(/[/\s]/)[0] || agent)
}

function element (tag, { text, className } = {}, ...children) {
  const node = document.createElement(tag)
  if (text !== undefined) node.textContent = text
  if (className !== undefined) node.className = className
  node.append(...children)
  return node
}

/**
 * One list item per session: device, its user agent, address, last use, "This device",
 * and a button that ends it (`onEnd(session, button)`).
 */
export function renderSessions (list, sessions, onEnd) {
  list.replaceChildren(...sessions.map((session) => {
    const device = describeAgent(session.user_agent)
    const title = element('p', {}, element('strong', { text: device }))
    if (session.current) title.append(' ', element('span', { className: 'badge', text: 'This device' }))
    const details = element('p', {}, `Address ${session.ip ?? 'unknown'} · last used `, timeElement(session.last_used_at),
      ' · signed in ', timeElement(session.created_at))
    const button = element('button', { text: session.current ? 'Sign out this device' : 'End this session', className: 'secondary' })
    button.type = 'button'
    button.dataset.session = session.id
    button.setAttribute('aria-label', `${button.textContent}: ${device}, address ${session.ip ?? 'unknown'}`)
    button.addEventListener('click', () => onEnd(session, button))
    const item = element('li', {}, title, element('p', { className: 'agent', text: session.user_agent ?? 'No user agent sent' }), details, button)
    item.dataset.session = session.id
    if (session.current) item.dataset.current = 'true'
    return item
  }))
}

const SCOPE_LABELS = { openid: 'who you are', email: 'your email address', profile: 'your name', offline_access: 'access while you are away' }

/** One list item per app with access: its name, what it may see, last use, and a Revoke button (`onRevoke(app, button)`). */
export function renderApps (list, apps, onRevoke) {
  if (apps.length === 0) {
    list.replaceChildren(element('li', { text: 'No app has access.' }))
    return
  }
  list.replaceChildren(...apps.map((app) => {
    const scopes = app.scopes.map(scope => SCOPE_LABELS[scope] ?? scope).join(', ')
    const button = element('button', { text: 'Revoke', className: 'secondary' })
    button.type = 'button'
    button.setAttribute('aria-label', `Revoke ${app.name}`)
    button.addEventListener('click', () => onRevoke(app, button))
    const item = element('li', {},
      element('p', {}, element('strong', { text: app.name })),
      element('p', { text: `Can see ${scopes}` }),
      element('p', {}, 'Last used ', timeElement(app.last_used_at), ' · allowed ', timeElement(app.granted_at)),
      button)
    item.dataset.app = app.client_id
    return item
  }))
}

/** One list item per security event: what, when, from where. */
export function renderEvents (list, events) {
  if (events.length === 0) {
    list.replaceChildren(element('li', { text: 'Nothing yet.' }))
    return
  }
  list.replaceChildren(...events.map((event) => element('li', {},
    element('p', {}, element('strong', { text: EVENT_LABELS[event.type] ?? event.type }), ' · ', timeElement(event.created_at)),
    element('p', { className: 'agent', text: `Address ${event.ip ?? 'unknown'} · ${describeAgent(event.user_agent)}` })
  )))
}

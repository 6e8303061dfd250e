import t from 'tap'
import { call, setCookieValue } from '../fixtures/http.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { startMailbox } from '../fixtures/mailbox.js'
import { startServer } from '../fixtures/process.js'

/*
 * Finding 1 of the review, over HTTP against the real server: with only a
 * stolen refresh cookie, an attacker refreshed, changed the email to theirs,
 * asked for a reset link and took the account. An email change now needs a
 * password proof within REAUTH_MAX_AGE, which a stolen cookie does not carry.
 */

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))
const cookieHeader = (cookies: Record<string, string>) => ({ cookie: Object.entries(cookies).map(([name, value]) => `${name}=${value}`).join('; ') })

t.test('a stolen refresh cookie alone cannot change the email once REAUTH_MAX_AGE has passed since the login', async (t) => {
  const mailbox = await startMailbox(t)
  const { baseUrl } = await startServer(t, {
    API_VARIANT: 'cookie',
    REAUTH_MAX_AGE: '1s',
    SMTP_URL: mailbox.smtpUrl,
    DATABASE_URL: await testDatabaseUrl(t, { persistent: true })
  })
  const owner = { first_name: 'Ada', last_name: 'Lovelace', username: 'ada', email: 'ada@example.com', password: 'analytical engine 1843' }
  const registered = await call(baseUrl, 'POST', '/auth/register', { body: owner })
  t.equal(registered.status, 201)
  const login = await call(baseUrl, 'POST', '/auth/login', { body: { email: owner.email, password: owner.password } })
  t.equal(login.status, 200)
  const stolenRefreshCookie = setCookieValue(login.headers, 'refreshToken') as string

  await sleep(1200) // REAUTH_MAX_AGE passes: the attacker's copy is as old as the owner's login

  const refreshed = await call(baseUrl, 'POST', '/auth/refresh-token', { headers: cookieHeader({ refreshToken: stolenRefreshCookie }) })
  t.equal(refreshed.status, 200, 'the stolen cookie still refreshes (the attacker holds a session)')
  const attackerCookies = { accessToken: setCookieValue(refreshed.headers, 'accessToken') as string, refreshToken: setCookieValue(refreshed.headers, 'refreshToken') as string }

  const takeover = await call(baseUrl, 'PATCH', `/users/${registered.body.id}`, { body: { email: 'mallory@example.com' }, headers: cookieHeader(attackerCookies) })
  t.equal(takeover.status, 403)
  t.equal(takeover.body.code, 'REAUTHENTICATION_REQUIRED')
  const guessed = await call(baseUrl, 'POST', '/auth/reauthenticate', { body: { password: 'a guess' }, headers: cookieHeader(attackerCookies) })
  t.equal(guessed.status, 401, 'a wrong password does not make the session fresh')
  t.equal((await call(baseUrl, 'PATCH', `/users/${registered.body.id}`, { body: { email: 'mallory@example.com' }, headers: cookieHeader(attackerCookies) })).status, 403)

  const read = await call(baseUrl, 'GET', `/users/${registered.body.id}`, { headers: cookieHeader(attackerCookies) })
  t.equal(read.body.email, owner.email, 'the email is still the owner\'s')
  t.equal((await call(baseUrl, 'POST', '/auth/forgot-password', { body: { email: 'mallory@example.com' } })).status, 202)

  // Control: the owner, who knows the password, proves it and changes the address.
  const ownerCookies = { accessToken: setCookieValue(login.headers, 'accessToken') as string }
  const reauthenticated = await call(baseUrl, 'POST', '/auth/reauthenticate', { body: { password: owner.password }, headers: cookieHeader(ownerCookies) })
  t.equal(reauthenticated.status, 204)
  const changed = await call(baseUrl, 'PATCH', `/users/${registered.body.id}`, { body: { email: 'ada@analytical.example' }, headers: cookieHeader(ownerCookies) })
  t.equal(changed.status, 204, 'within REAUTH_MAX_AGE of a password proof the change applies')
  const notice = await mailbox.next(owner.email, 'The email address of your account was changed')
  t.match(notice.text, /from ada@example\.com to ada@analytical\.example/)
  t.match(notice.text, /127\.0\.0\.1/, 'it says from which address')
  t.match(notice.text, /If it was not you/, 'and what to do')
  // forgot-password answers before it looks the address up and queues the mail: wait for the mail a taken
  // account would have sent to mallory@example.com (as long as the owner's notice above took, and more).
  await t.rejects(mailbox.next('mallory@example.com', undefined, 3000), /no mail to mallory@example\.com/, 'the attacker\'s address never gets a mail')
  t.notOk(mailbox.received.some(mail => JSON.stringify(mail.to ?? '').includes('mallory')), 'nor did any mail name it')
})

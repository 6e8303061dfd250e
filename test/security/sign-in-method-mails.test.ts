import t from 'tap'
import { SoftwareCredential } from '../fixtures/authenticator.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser } from '../fixtures/factories.js'
import { startMailbox } from '../fixtures/mailbox.js'
import { enableTotp } from '../fixtures/mfa.js'

/*
 * Issue 21, finding 12: adding a passkey or turning TOTP off sent no mail, so an owner whose
 * session was used by someone else never heard that a new way in was added or a factor removed.
 * (A provider linked by a sign-in: test/security/provider-factors.test.ts.)
 */

const variant = 'header'

t.test('the owner is mailed when a passkey is added to the account', async (t) => {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl } })
  const session = await loggedInUser(server, variant)
  const options = await server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', ...credentials(variant, session) })
  const payload = { ...new SoftwareCredential().register(options.json()), name: 'Work laptop' }
  t.equal((await server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, session), payload })).statusCode, 201)

  const mail = await mailbox.next(session.user.email, 'A passkey was added to your account')
  t.match(mail.text, /"Work laptop"/, 'it names the passkey')
  t.match(mail.text, /If it was not you/)
})

t.test('the owner is mailed when TOTP is turned off, and not for a call that changed nothing', async (t) => {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant, env: { SMTP_URL: mailbox.smtpUrl } })
  const session = await loggedInUser(server, variant)
  await enableTotp(server, variant, session)
  t.equal((await server.inject({ method: 'DELETE', url: '/auth/mfa/totp', ...credentials(variant, session) })).statusCode, 204)
  const mail = await mailbox.next(session.user.email, 'Two-step sign-in was turned off')
  t.match(mail.text, /turned off/)

  t.equal((await server.inject({ method: 'DELETE', url: '/auth/mfa/totp', ...credentials(variant, session) })).statusCode, 204, 'idempotent')
  await server.mailer.idle()
  t.equal(mailbox.received.filter(received => received.subject === 'Two-step sign-in was turned off').length, 1, 'one mail, for the one change')
})

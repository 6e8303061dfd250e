import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { MFA_MAX_WRONG_CODES, MFA_WRONG_CODES_AFTER_RESET } from '../../core/mfa/mfa.js'
import { RESET_MAILS_PER_DAY } from '../../core/accounts/account.js'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { loggedInUser, type RegisteredUser, markEmailVerified } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink, type Mailbox } from '../fixtures/mailbox.js'
import { codeAt, enableTotp, mfaToken, verify } from '../fixtures/mfa.js'

/*
 * Finding 5 of the second review: nothing capped second-factor guesses in the long run. The lockout
 * (in memory or Redis, forgotten after its window, cleared by a reset) let someone who knows the
 * password try about 450 codes a day. The store now counts wrong codes since the last right one,
 * over every mfa_token and every instance: after MFA_MAX_WRONG_CODES the second step refuses every
 * code until a password reset, and the owner is mailed once. Both backends: the count is a store write.
 */

const PUBLIC_URL = 'https://accounts.example.com'
const LOCKED_SUBJECT = 'Your account\'s second factor was locked'

/** Six-digit codes none of which is the authenticator's current, previous or next one. */
function wrongCodes (secret: string, count: number): string[] {
  const near = new Set([-1, 0, 1].map(steps => codeAt(secret, steps)))
  return Array.from({ length: count + 3 }, (_, index) => String(100_000 + index * 7919)).filter(code => !near.has(code)).slice(0, count)
}

/** Wrong codes over as many mfa_tokens as they take (each is void after five), every one refused as wrong. */
async function guess (t: Test, server: FastifyInstance, user: RegisteredUser, codes: string[]) {
  let token = await mfaToken(server, user)
  for (const [index, code] of codes.entries()) {
    if (index % 5 === 0) token = await mfaToken(server, user)
    assertError(t, await verify(server, token, code), 401, 'INVALID_MFA_CODE')
  }
}

async function resetPassword (server: FastifyInstance, mailbox: Mailbox, user: RegisteredUser, password: string): Promise<RegisteredUser> {
  await server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email: user.email } })
  const token = tokenFromLink(await mailbox.next(user.email, 'Reset your password'), PUBLIC_URL, '/reset-password')
  const reset = await server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: password } })
  if (reset.statusCode !== 204) throw new Error(`reset: ${reset.statusCode} ${reset.body}`)
  return { ...user, password }
}

const lockMails = (mailbox: Mailbox) => mailbox.received.filter(mail => mail.subject === LOCKED_SUBJECT)

t.test(`after ${MFA_MAX_WRONG_CODES} wrong codes the second step refuses every code, on every instance (one started later on the same database too), until a password reset; the owner is mailed once`, async (t) => {
  const mailbox = await startMailbox(t)
  const env = { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL, DATABASE_URL: await testDatabaseUrl(t, { persistent: true }) }
  const server = await build(t, { variant: 'header', env })
  const session = await loggedInUser(server, 'header')
  // A verified address: a reset of a never-verified account removes its TOTP altogether (pre-hijacking).
  await markEmailVerified(server.store, session.user.id)
  const { secret, recoveryCodes } = await enableTotp(server, 'header', session)
  let { user } = session

  await guess(t, server, user, wrongCodes(secret, MFA_MAX_WRONG_CODES))
  const lockMail = await mailbox.next(user.email, LOCKED_SUBJECT)
  t.match(lockMail.text, /refuses every code/)
  t.match(lockMail.text, /reset/)

  assertError(t, await verify(server, await mfaToken(server, user), codeAt(secret, 1)), 403, 'MFA_LOCKED')
  assertError(t, await verify(server, await mfaToken(server, user), recoveryCodes[0]), 403, 'MFA_LOCKED')
  const other = await build(t, { variant: 'header', env })
  assertError(t, await verify(other, await mfaToken(other, user), codeAt(secret, 1)), 403, 'MFA_LOCKED')
  await server.mailer.idle()
  t.equal(lockMails(mailbox).length, 1, 'mailed once, however many codes are refused after')

  user = await resetPassword(server, mailbox, user, 'a brand new secret')
  const afterReset = await mfaToken(server, user)
  t.equal((await verify(server, afterReset, codeAt(secret, 1))).statusCode, 200, 'after a reset the right code passes')
})

t.test(`a reset gives ${MFA_WRONG_CODES_AFTER_RESET} more wrong codes, not a fresh count; a right code clears the count`, async (t) => {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant: 'header', env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
  const session = await loggedInUser(server, 'header')
  // A verified address: a reset of a never-verified account removes its TOTP altogether (pre-hijacking).
  await markEmailVerified(server.store, session.user.id)
  const { secret, recoveryCodes } = await enableTotp(server, 'header', session)
  let { user } = session
  const codes = wrongCodes(secret, MFA_MAX_WRONG_CODES)

  await guess(t, server, user, codes)
  await mailbox.next(user.email, LOCKED_SUBJECT)
  user = await resetPassword(server, mailbox, user, 'a first new secret')
  await guess(t, server, user, codes.slice(0, MFA_WRONG_CODES_AFTER_RESET))
  assertError(t, await verify(server, await mfaToken(server, user), recoveryCodes[0]), 403, 'MFA_LOCKED')
  await mailbox.next(user.email, LOCKED_SUBJECT)
  t.ok(MFA_WRONG_CODES_AFTER_RESET * RESET_MAILS_PER_DAY < 100, 'whoever holds the mailbox too gains few guesses a day')

  user = await resetPassword(server, mailbox, user, 'a second new secret')
  t.equal((await verify(server, await mfaToken(server, user), recoveryCodes[0])).statusCode, 200, 'the right code passes')
  await guess(t, server, user, codes.slice(0, MFA_MAX_WRONG_CODES - 1))
  t.equal((await verify(server, await mfaToken(server, user), recoveryCodes[1])).statusCode, 200, 'the right code cleared the count before')
  await guess(t, server, user, codes.slice(0, MFA_MAX_WRONG_CODES - 1))
  t.equal((await verify(server, await mfaToken(server, user), codeAt(secret, 1))).statusCode, 200, 'and again')
})

t.test('parallel wrong codes over several mfa_tokens never count past the cap', async (t) => {
  const server = await build(t, { variant: 'header' })
  const session = await loggedInUser(server, 'header')
  const { secret } = await enableTotp(server, 'header', session)
  const tokens = await Promise.all(Array.from({ length: 6 }, () => mfaToken(server, session.user)))
  const codes = wrongCodes(secret, 5)
  const answers = await Promise.all(tokens.flatMap(token => codes.map(code => verify(server, token, code))))
  const statuses = answers.map(answer => answer.statusCode)
  t.equal(statuses.filter(status => status === 401).length, MFA_MAX_WRONG_CODES, 'exactly the cap was judged')
  t.equal(statuses.filter(status => status === 403).length, 30 - MFA_MAX_WRONG_CODES, 'the rest refused as locked')
  t.equal((await server.store.findTotp(session.user.id))?.failedCodes, MFA_MAX_WRONG_CODES)
})

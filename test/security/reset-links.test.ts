import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { RESET_MAILS_PER_HOUR } from '../../core/accounts/account.js'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, logIn, registerUser } from '../fixtures/factories.js'
import { startMailbox, tokenFromLink, type Mailbox } from '../fixtures/mailbox.js'

/*
 * Finding 7 of the review: anyone could void a victim's reset link by asking
 * for another; one address could be sent 5 reset mails a minute; a link
 * mailed before a password or email change still worked after it.
 */

const PUBLIC_URL = 'http://localhost:5173'
const RESET = 'Reset your password'

async function setUp (t: Parameters<typeof build>[0]): Promise<{ server: FastifyInstance, mailbox: Mailbox }> {
  const mailbox = await startMailbox(t)
  const server = await build(t, { variant: 'cookie', env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
  return { server, mailbox }
}

const forgot = (server: FastifyInstance, email: string) => server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email } })
const reset = (server: FastifyInstance, token: string, password = 'a brand new secret') =>
  server.inject({ method: 'POST', url: '/auth/reset-password', payload: { token, new_password: password } })

t.test('someone else asking for links does not void the owner\'s: the last 3 stay live', async (t) => {
  const { server, mailbox } = await setUp(t)
  const user = await registerUser(server, 'cookie')
  await forgot(server, user.email)
  const owners = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  await forgot(server, user.email) // an attacker, twice
  await forgot(server, user.email)
  await mailbox.next(user.email, RESET)
  await mailbox.next(user.email, RESET)
  t.equal((await reset(server, owners)).statusCode, 204, 'the owner\'s link still works')
})

t.test('past 3 live links the oldest is void', async (t) => {
  const { server, mailbox } = await setUp(t)
  const user = await registerUser(server, 'cookie')
  await forgot(server, user.email)
  const oldest = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  for (let more = 0; more < 3; more++) {
    await forgot(server, user.email)
    await mailbox.next(user.email, RESET)
  }
  assertError(t, await reset(server, oldest), 400, 'INVALID_RESET_TOKEN')
})

t.test(`one address is sent at most ${RESET_MAILS_PER_HOUR} reset mails an hour, and forgot-password answers 202 all the same`, async (t) => {
  const { server, mailbox } = await setUp(t)
  const user = await registerUser(server, 'cookie')
  const answers = await Promise.all(Array.from({ length: RESET_MAILS_PER_HOUR + 3 }, () => forgot(server, user.email)))
  t.same(answers.map(answer => answer.statusCode), Array(RESET_MAILS_PER_HOUR + 3).fill(202))
  await server.mailer.idle()
  for (let mail = 0; mail < RESET_MAILS_PER_HOUR; mail++) await mailbox.next(user.email, RESET)
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(mailbox.received.filter(mail => mail.subject === RESET).length, RESET_MAILS_PER_HOUR, 'parallel requests did not get past the quota')
})

t.test('a link mailed before a password change no longer works after it', async (t) => {
  const { server, mailbox } = await setUp(t)
  const user = await registerUser(server, 'cookie')
  const session = await logIn(server, 'cookie', user)
  await forgot(server, user.email)
  const token = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  const change = await server.inject({ method: 'POST', url: '/auth/change-password', ...credentials('cookie', session), payload: { current_password: user.password, new_password: 'changed on purpose' } })
  t.equal(change.statusCode, 204)
  assertError(t, await reset(server, token), 400, 'INVALID_RESET_TOKEN')
})

t.test('a link mailed before an email change no longer works after it', async (t) => {
  const { server, mailbox } = await setUp(t)
  const user = await registerUser(server, 'cookie')
  const session = await logIn(server, 'cookie', user)
  await forgot(server, user.email)
  const token = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  const change = await server.inject({ method: 'PATCH', url: `/users/${user.id}`, ...credentials('cookie', session), payload: { email: 'elsewhere@example.com' } })
  t.equal(change.statusCode, 204)
  assertError(t, await reset(server, token), 400, 'INVALID_RESET_TOKEN')
})

t.test('a link mailed before a reset no longer works after it', async (t) => {
  const { server, mailbox } = await setUp(t)
  const user = await registerUser(server, 'cookie')
  await forgot(server, user.email)
  const first = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  await forgot(server, user.email)
  const second = tokenFromLink(await mailbox.next(user.email, RESET), PUBLIC_URL, '/reset-password')
  t.equal((await reset(server, second)).statusCode, 204)
  assertError(t, await reset(server, first, 'yet another secret'), 400, 'INVALID_RESET_TOKEN')
})

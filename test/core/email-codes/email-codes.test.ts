import t, { type Test } from 'tap'
import { EMAIL_CODE_MAX_ATTEMPTS, createEmailCodes, emailCodeLink } from '../../../core/email-codes/email-codes.js'
import { silentLogger } from '../../../core/logger.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { fakeMailer } from '../accounts/fakes.js'

/* The mailed sign-in codes' rules (core/email-codes/email-codes.ts) on a fresh store, with a mailer that runs jobs at once. */

const PUBLIC_URL = 'https://accounts.example.com'

async function setUp (t: Test, secretKey?: Buffer) {
  const store = await testStore(t)
  const clock = testClock()
  const mailer = fakeMailer()
  const emailCodes = createEmailCodes({ store, clock, mailer, log: silentLogger }, { publicUrl: PUBLIC_URL, secretKey })
  /** Asks for a code and reads it from the mail the store wrote to the outbox. */
  async function codeFor (email: string): Promise<string> {
    emailCodes.send(email, { signUp: true })
    await mailer.idle()
    const far = new Date(Date.now() + 400 * 86_400_000)
    const mails = await store.claimMails(far, new Date(far.getTime() + 86_400_000), 100)
    const code = /#email_code=(\d{6})&/.exec(mails.at(-1)?.text ?? '')?.[1]
    if (code === undefined) throw new Error('no code mailed')
    return code
  }
  return { store, clock, emailCodes, codeFor, mailer }
}

t.test('a code is six digits; its link carries it and the address in the fragment', async (t) => {
  const { codeFor } = await setUp(t)
  t.match(await codeFor('ada@example.com'), /^\d{6}$/)
  t.equal(emailCodeLink(PUBLIC_URL, 'a+b@example.com', '012345'), `${PUBLIC_URL}/account#email_code=012345&email=a%2Bb%40example.com`)
})

t.test('the right code passes once used; spaces and hyphens are ignored; a wrong one is INVALID_CODE', async (t) => {
  const { emailCodes, codeFor } = await setUp(t)
  const code = await codeFor('ada@example.com')
  await t.rejects(emailCodes.check('ada@example.com', code === '000000' ? '000001' : '000000'), { code: 'INVALID_CODE', statusCode: 401 })
  await t.rejects(emailCodes.check('grace@example.com', code), { code: 'INVALID_CODE' }, 'another address\'s code')
  const right = await emailCodes.check('ada@example.com', `${code.slice(0, 3)} - ${code.slice(3)}`)
  await emailCodes.use(right)
  await t.rejects(emailCodes.use(right), { code: 'INVALID_CODE' }, 'used once')
  await t.rejects(emailCodes.check('ada@example.com', code), { code: 'INVALID_CODE' })
})

t.test('a released right code stays good; the cap counts wrong guesses only once each', async (t) => {
  const { emailCodes, codeFor } = await setUp(t)
  const code = await codeFor('ada@example.com')
  for (let n = 0; n < 3; n++) await emailCodes.release(await emailCodes.check('ada@example.com', code))
  for (let n = 1; n < EMAIL_CODE_MAX_ATTEMPTS; n++) await t.rejects(emailCodes.check('ada@example.com', 'wrong'), { code: 'INVALID_CODE' })
  t.ok(await emailCodes.check('ada@example.com', code), 'released guesses were given back: the fifth try is the right one')
})

t.test('the store keeps neither the code nor a hash that another key would make', async (t) => {
  const keyed = await setUp(t, Buffer.alloc(32, 7))
  const code = await keyed.codeFor('ada@example.com')
  const stored = await keyed.store.reserveEmailCodeAttempt('ada@example.com', new Date(keyed.clock.now()), EMAIL_CODE_MAX_ATTEMPTS)
  t.ok(stored !== undefined && !stored.codeHash.includes(code), 'not the code')
  const other = await setUp(t, Buffer.alloc(32, 8))
  await other.store.issueEmailCode({ email: 'ada@example.com', codeHash: stored?.codeHash ?? '', expiresAt: new Date(other.clock.now() + 60_000) }, new Date(other.clock.now()), {})
  await t.rejects(other.emailCodes.check('ada@example.com', code), { code: 'INVALID_CODE' }, 'a hash copied under another key opens nothing')
})

t.test('without sign-up, an unknown address is mailed nothing', async (t) => {
  const { store, emailCodes, mailer } = await setUp(t)
  emailCodes.send('nobody@example.com', { signUp: false })
  await mailer.idle()
  t.equal(await store.countPendingMails(), 0)
  await store.createUser({ firstName: 'A', lastName: 'L', username: null, email: 'ada@example.com', passwordHash: null })
  emailCodes.send('ada@example.com', { signUp: false })
  await mailer.idle()
  t.equal(await store.countPendingMails(), 1, 'a known one its code')
})

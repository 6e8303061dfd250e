import t from 'tap'
import { build } from '../../fixtures/build.js'
import { testClock } from '../../fixtures/clock.js'
import { assertError } from '../../fixtures/assertions.js'
import { credentials, loggedInUser } from '../../fixtures/factories.js'
import { startMailbox, tokenFromLink } from '../../fixtures/mailbox.js'

/*
 * POST /invitations/preview, both variants: what the invitation page shows before any sign-in (the organisation,
 * who invites, the address, the role, until when), for the mailed token alone; 400 as accept once the invitation is
 * used, withdrawn or expired, or for an unknown token; limited per client address.
 */

const PUBLIC_URL = 'https://accounts.example.com'
const SEVEN_DAYS = 7 * 24 * 3_600_000

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: the preview names the invitation without a sign-in, until it is used, withdrawn or expired`, async (t) => {
    const mailbox = await startMailbox(t)
    const clock = testClock()
    const server = await build(t, { variant, clock, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
    const owner = await loggedInUser(server, variant)
    const asOwner = (method: 'POST' | 'DELETE', url: string, payload?: Record<string, unknown>) =>
      server.inject({ method, url, ...credentials(variant, owner), ...(payload === undefined ? {} : { payload }) })
    const orgId: number = (await asOwner('POST', '/orgs', { name: 'Acme Ltd' })).json().id
    const invite = async (email: string, role: string) => {
      const invitation = (await asOwner('POST', `/orgs/${orgId}/invitations`, { email, role })).json()
      return { invitation, token: tokenFromLink(await mailbox.next(email, 'You are invited to join an organisation'), PUBLIC_URL, '/invitations') }
    }
    const preview = (token: unknown) => server.inject({ method: 'POST', url: '/invitations/preview', payload: { token } })

    const bob = await loggedInUser(server, variant)
    const { invitation, token } = await invite(bob.user.email, 'admin')
    const shown = await preview(token)
    t.equal(shown.statusCode, 200, shown.body)
    t.same(shown.json(), {
      org: { name: 'Acme Ltd', slug: 'acme-ltd' },
      inviter: { name: 'Ada Lovelace' },
      email: bob.user.email,
      role: 'admin',
      expires_at: invitation.expires_at
    }, 'no sign-in: the organisation, who invites, the address, the role and until when')
    t.equal((await preview(token)).statusCode, 200, 'looking changes nothing')
    t.equal((await server.inject({ method: 'POST', url: '/invitations/accept', payload: { token }, ...credentials(variant, bob) })).statusCode, 200)
    assertError(t, await preview(token), 400, 'INVALID_RESET_TOKEN')

    const withdrawn = await invite('carol@example.com', 'member')
    t.equal((await asOwner('DELETE', `/orgs/${orgId}/invitations/${withdrawn.invitation.id}`)).statusCode, 204)
    assertError(t, await preview(withdrawn.token), 400, 'INVALID_RESET_TOKEN')

    const expiring = await invite('dave@example.com', 'member')
    t.equal((await preview(expiring.token)).statusCode, 200)
    clock.advance(SEVEN_DAYS + 1000)
    assertError(t, await preview(expiring.token), 400, 'INVALID_RESET_TOKEN')

    assertError(t, await preview('no-such-token'), 400, 'INVALID_RESET_TOKEN')
    assertError(t, await preview(''), 400, 'VALIDATION_FAILED')
    assertError(t, await server.inject({ method: 'POST', url: '/invitations/preview', payload: {} }), 400, 'VALIDATION_FAILED')
  })
}

t.test('the preview is limited per client address', async (t) => {
  const server = await build(t, { env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '2' } })
  const preview = () => server.inject({ method: 'POST', url: '/invitations/preview', payload: { token: 'no-such-token' }, remoteAddress: '203.0.113.9' })
  assertError(t, await preview(), 400, 'INVALID_RESET_TOKEN')
  assertError(t, await preview(), 400, 'INVALID_RESET_TOKEN')
  const limited = await preview()
  t.equal(limited.statusCode, 429, 'the third within the window is refused')
  t.ok(Number(limited.headers['retry-after']) > 0, 'with when to come back')
})

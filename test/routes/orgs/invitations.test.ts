import t, { type Test } from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Variant } from '../../../core/config.js'
import { build } from '../../fixtures/build.js'
import { testClock, type TestClock } from '../../fixtures/clock.js'
import { assertError } from '../../fixtures/assertions.js'
import { credentials, loggedInUser, logIn, registerUser, type Session } from '../../fixtures/factories.js'
import { startMailbox, tokenFromLink, type Mailbox } from '../../fixtures/mailbox.js'

/*
 * Invitations (docs/organisations.md), both variants: mailed with a role, listed while pending, withdrawn,
 * expired after 7 days, single use, accepted only by the invited address (which they prove), the accepting
 * session kept.
 */

const PUBLIC_URL = 'https://accounts.example.com'
const SUBJECT = 'You are invited to join an organisation'
const SEVEN_DAYS = 7 * 24 * 3_600_000

interface World { server: FastifyInstance, clock: TestClock, mailbox: Mailbox, variant: Variant }

async function setUp (t: Test, variant: Variant): Promise<World> {
  const mailbox = await startMailbox(t)
  const clock = testClock()
  const server = await build(t, { variant, clock, env: { SMTP_URL: mailbox.smtpUrl, PUBLIC_URL } })
  return { server, clock, mailbox, variant }
}

function as ({ server, variant }: World, session: Session) {
  return async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: Record<string, unknown>): Promise<LightMyRequestResponse> =>
    await server.inject({ method, url, ...credentials(variant, session), ...(payload === undefined ? {} : { payload }) })
}

/** An organisation with its owner; invites `email` with `role` and answers the mailed token. */
async function orgOf (world: World) {
  const owner = await loggedInUser(world.server, world.variant)
  const orgId: number = (await as(world, owner)('POST', '/orgs', { name: 'Acme Ltd' })).json().id
  const invite = async (email: string, role = 'member', by = owner) => {
    const response = await as(world, by)('POST', `/orgs/${orgId}/invitations`, { email, role })
    if (response.statusCode !== 201) throw new Error(`invitation failed: ${response.statusCode} ${response.body}`)
    const mail = await world.mailbox.next(email.toLowerCase(), SUBJECT)
    return { invitation: response.json(), token: tokenFromLink(mail, PUBLIC_URL, '/invitations'), mail }
  }
  return { owner, orgId, invite }
}

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: an invitation is mailed, listed, and accepted once by its address, which it proves`, async (t) => {
    const world = await setUp(t, variant)
    const { owner, orgId, invite } = await orgOf(world)
    const bob = await loggedInUser(world.server, variant)
    t.equal((await world.server.store.findUserById(bob.user.id))?.emailVerified, false, 'bob has not verified his address')

    const { invitation, token, mail } = await invite(bob.user.email.toUpperCase(), 'admin')
    t.match(invitation, { email: bob.user.email, role: 'admin' }, 'the address lower-cased')
    t.equal(new Date(invitation.expires_at).getTime(), world.clock.now() + SEVEN_DAYS, '7 days')
    t.match(mail.text, /Ada Lovelace invites .* to join the organisation "Acme Ltd" as admin/)
    t.ok(Buffer.from(token, 'base64url').length >= 32, 'at least 256 random bits')
    const stored = await world.server.store.listInvitations(orgId, new Date(world.clock.now()))
    t.not(stored[0].tokenHash, token, 'only a hash of the token is stored')
    t.same((await as(world, owner)('GET', `/orgs/${orgId}/invitations`)).json(), { invitations: [invitation] })

    t.match(await world.server.invitations.preview(token), { orgName: 'Acme Ltd', inviterName: 'Ada Lovelace', email: bob.user.email, role: 'admin' },
      'what the invitation page shows before sign-in')
    const accepted = await as(world, bob)('POST', '/invitations/accept', { token })
    t.equal(accepted.statusCode, 200, accepted.body)
    t.same(accepted.json(), { org: { id: orgId, name: 'Acme Ltd', slug: 'acme-ltd', role: 'admin' } })
    t.match((await as(world, bob)('GET', '/orgs')).json(), { orgs: [{ id: orgId, role: 'admin' }] })
    t.equal((await world.server.store.findUserById(bob.user.id))?.emailVerified, true, 'the link proved the address')
    t.equal((await as(world, bob)('GET', `/orgs/${orgId}/members`)).statusCode, 200, 'the accepting session stays')
    const refreshed = await world.server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, bob) })
    t.equal(refreshed.statusCode, 200, 'and refreshes')
    t.match(await world.server.store.listSecurityEvents(bob.user.id, { limit: 5 }), [{ type: 'org.member_added', detail: { org_id: orgId, role: 'admin', invitation_id: invitation.id, invited_by: owner.user.id } }])
    t.same((await as(world, owner)('GET', `/orgs/${orgId}/invitations`)).json(), { invitations: [] }, 'no longer pending')

    assertError(t, await as(world, bob)('POST', '/invitations/accept', { token }), 400, 'INVALID_RESET_TOKEN')
    assertError(t, await as(world, bob)('POST', '/invitations/accept', { token: 'unknown' }), 400, 'INVALID_RESET_TOKEN')
    await t.rejects(world.server.invitations.preview(token), { code: 'INVALID_RESET_TOKEN', statusCode: 400 }, 'a used one shows nothing')
    assertError(t, await as(world, bob)('POST', '/invitations/accept', {}), 400, 'VALIDATION_FAILED')
    assertError(t, await world.server.inject({ method: 'POST', url: '/invitations/accept', payload: { token } }), 401, 'MISSING_TOKEN')
  })

  t.test(`${variant} variant: another account is refused and the invitation stays for its address`, async (t) => {
    const world = await setUp(t, variant)
    const { orgId, invite } = await orgOf(world)
    const mallory = await loggedInUser(world.server, variant)
    const carol = await registerUser(world.server, variant)
    const { token } = await invite(carol.email)
    assertError(t, await as(world, mallory)('POST', '/invitations/accept', { token }), 403, 'INVITATION_EMAIL_MISMATCH')
    assertError(t, await as(world, mallory)('GET', `/orgs/${orgId}`), 404, 'ORG_NOT_FOUND')
    const accepted = await as(world, await logIn(world.server, variant, carol))('POST', '/invitations/accept', { token })
    t.equal(accepted.statusCode, 200, 'the invited address still can')
    t.match(accepted.json(), { org: { id: orgId, role: 'member' } })
  })

  t.test(`${variant} variant: a member already keeps its role`, async (t) => {
    const world = await setUp(t, variant)
    const { owner, orgId, invite } = await orgOf(world)
    const { token } = await invite(owner.user.email, 'member')
    const accepted = await as(world, owner)('POST', '/invitations/accept', { token })
    t.equal(accepted.statusCode, 200)
    t.match(accepted.json(), { org: { id: orgId, role: 'owner' } })
    assertError(t, await as(world, owner)('POST', '/invitations/accept', { token }), 400, 'INVALID_RESET_TOKEN')
  })

  t.test(`${variant} variant: withdrawn and expired invitations no longer work`, async (t) => {
    const world = await setUp(t, variant)
    const { owner, orgId, invite } = await orgOf(world)
    const dan = await loggedInUser(world.server, variant)
    const withdrawn = await invite(dan.user.email)
    const deleted = await as(world, owner)('DELETE', `/orgs/${orgId}/invitations/${withdrawn.invitation.id as number}`)
    t.equal(deleted.statusCode, 204)
    assertError(t, await as(world, owner)('DELETE', `/orgs/${orgId}/invitations/${withdrawn.invitation.id as number}`), 404, 'INVITATION_NOT_FOUND')
    assertError(t, await as(world, dan)('POST', '/invitations/accept', { token: withdrawn.token }), 400, 'INVALID_RESET_TOKEN')

    const expiring = await invite(dan.user.email)
    world.clock.advance(SEVEN_DAYS)
    assertError(t, await as(world, await logIn(world.server, variant, dan.user))('POST', '/invitations/accept', { token: expiring.token }), 400, 'INVALID_RESET_TOKEN')
    t.same((await world.server.store.membershipsOfUser(dan.user.id)), [], 'dan joined nothing')
  })

  t.test(`${variant} variant: who may invite, list and withdraw`, async (t) => {
    const world = await setUp(t, variant)
    const { orgId, invite } = await orgOf(world)
    const admin = await loggedInUser(world.server, variant)
    const member = await loggedInUser(world.server, variant)
    const outsider = await loggedInUser(world.server, variant)
    for (const [session, role] of [[admin, 'admin'], [member, 'member']] as const) {
      const { token } = await invite(session.user.email, role)
      t.equal((await as(world, session)('POST', '/invitations/accept', { token })).statusCode, 200)
    }
    assertError(t, await as(world, member)('POST', `/orgs/${orgId}/invitations`, { email: 'x@example.test', role: 'member' }), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, member)('GET', `/orgs/${orgId}/invitations`), 403, 'ORG_FORBIDDEN')
    assertError(t, await as(world, admin)('POST', `/orgs/${orgId}/invitations`, { email: 'x@example.test', role: 'owner' }), 403, 'ORG_FORBIDDEN')
    const byAdmin = await invite('y@example.test', 'admin', admin)
    t.match(byAdmin.invitation, { role: 'admin' }, 'an admin invites an admin')
    assertError(t, await as(world, member)('DELETE', `/orgs/${orgId}/invitations/${byAdmin.invitation.id as number}`), 403, 'ORG_FORBIDDEN')
    for (const [method, url, payload] of [
      ['POST', `/orgs/${orgId}/invitations`, { email: 'z@example.test', role: 'member' }], ['GET', `/orgs/${orgId}/invitations`],
      ['DELETE', `/orgs/${orgId}/invitations/${byAdmin.invitation.id as number}`]
    ] as const) {
      assertError(t, await as(world, outsider)(method, url, payload), 404, 'ORG_NOT_FOUND')
    }
    assertError(t, await as(world, admin)('POST', `/orgs/${orgId}/invitations`, { email: 'not an address', role: 'member' }), 400, 'VALIDATION_FAILED')
    assertError(t, await as(world, admin)('POST', `/orgs/${orgId}/invitations`, { email: 'a@example.test', role: 'boss' }), 400, 'VALIDATION_FAILED')
  })
}

import t, { type Test } from 'tap'
import type { Client, EventSubject, SecurityEventType } from '../../../core/events/security-events.js'
import { createSessions, type SessionsOptions } from '../../../core/sessions/sessions.js'
import type { AccessTokenClaims } from '../../../core/tokens/access-tokens.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

const client: Client = { ip: '192.0.2.1', userAgent: 'test', requestId: null }
/** A session started by a password sign-in. */
const password = { methods: ['password' as const] }
const options: SessionsOptions = {
  refreshTokenTtlSeconds: 3600,
  refreshReuseGraceSeconds: 10,
  sessionMaxAgeSeconds: 2 * 3600,
  reauthMaxAgeSeconds: 300
}

/** Sessions over a fresh store and a test clock; access tokens are their claims as JSON, events a list. */
async function setUp (t: Test) {
  const store = await testStore(t)
  const clock = testClock()
  const events: Array<{ type: SecurityEventType, subject: EventSubject }> = []
  // The memberships the organisations store holds, its reads counted.
  let membershipReads = 0
  const memberships = {
    async membershipOf (orgId: number, userId: number) {
      membershipReads++
      return await store.membershipOf(orgId, userId)
    }
  }
  const sessions = createSessions({
    store,
    clock,
    accessTokens: { sign: (claims: AccessTokenClaims) => JSON.stringify(claims) },
    securityEvents: { async record (type, _client, subject) { events.push({ type, subject }) } },
    statusList: { claim: (idx: number) => ({ status_list: { idx, uri: 'https://example.test/status/1' } }) },
    memberships
  }, options)
  const newUser = async (email: string) => (await store.createUser({ firstName: 'A', lastName: 'B', username: null, email, passwordHash: null })).id
  /** `userId` joins a new organisation of another owner with `role`, as an accepted invitation makes it. */
  const joinNew = async (slug: string, userId: number, role: 'admin' | 'member') => {
    const owner = await newUser(`owner-of-${slug}@example.com`)
    const org = await store.createOrganisation({ name: slug, slug, ownerId: owner }, new Date())
    const email = (await store.findUserById(userId))?.email ?? ''
    await store.createInvitation({ orgId: org.id, email, role, tokenHash: `join-${slug}`, invitedBy: owner, expiresAt: new Date(Date.now() + 3_600_000) },
      new Date(), { to: email, subject: 'Join', text: 'Join' })
    await store.acceptInvitation(`join-${slug}`, { id: userId, email }, new Date())
    return org.id
  }
  return { store, clock, events, sessions, userId: await newUser('owner@example.com'), newUser, joinNew, membershipReads: () => membershipReads }
}

t.test('a login starts a session: an access token for it and a refresh token that lives REFRESH_TOKEN_TTL', async (t) => {
  const { sessions, userId } = await setUp(t)
  const started = await sessions.start(userId, client, password)
  t.match(started, { userId, sessionId: String, refreshToken: String, refreshTokenMaxAge: 3600 })
  t.match(JSON.parse(started.accessToken), { userId, sessionId: started.sessionId, status: { status_list: { idx: Number } } }, 'the token carries its status list entry')
})

t.test('a rotated refresh token still works within the grace period; after it, its reuse ends the session', async (t) => {
  const { sessions, userId, clock, events } = await setUp(t)
  const { refreshToken, sessionId } = await sessions.start(userId, client, password)
  const rotated = await sessions.refresh(refreshToken, { rotate: true }, client)
  t.type(rotated.refreshToken, 'string', 'a successor is issued')
  t.not(rotated.refreshToken, refreshToken)

  const twin = await sessions.refresh(refreshToken, { rotate: true }, client)
  t.equal(twin.refreshToken, undefined, 'a tab refreshing at the same time gets an access token, no second successor')

  clock.advance(10_000)
  await t.rejects(sessions.refresh(refreshToken, { rotate: true }, client), { code: 'REFRESH_TOKEN_REUSED' })
  t.same(events.map(event => event.type), ['refresh_token_reused'])
  t.match(events[0].subject, { userId, sessionId })
  await t.rejects(sessions.refresh(rotated.refreshToken as string, { rotate: true }, client), { code: 'INVALID_REFRESH_TOKEN' }, 'the successor is revoked with its session')
})

t.test('without rotation the refresh token is kept; another user\'s token is TOKEN_MISMATCH', async (t) => {
  const { sessions, userId, newUser } = await setUp(t)
  const { refreshToken } = await sessions.start(userId, client, password)
  const kept = await sessions.refresh(refreshToken, { rotate: false }, client)
  t.equal(kept.refreshToken, undefined)
  t.match(JSON.parse(kept.accessToken), { userId })
  await t.rejects(sessions.refresh(refreshToken, { rotate: false, expectedUserId: await newUser('other@example.com') }, client), { code: 'TOKEN_MISMATCH' })
  await t.rejects(sessions.refresh('not a token we issued', { rotate: false }, client), { code: 'INVALID_REFRESH_TOKEN' })
})

t.test('a session ends SESSION_MAX_AGE after its login however often it is refreshed', async (t) => {
  const { sessions, userId, clock } = await setUp(t)
  const { refreshToken } = await sessions.start(userId, client, password)
  clock.advance(50 * 60_000)
  const first = await sessions.refresh(refreshToken, { rotate: true }, client)
  t.equal(first.refreshTokenMaxAge, 3600, 'a successor lives REFRESH_TOKEN_TTL while the session has longer')
  clock.advance(50 * 60_000)
  const last = await sessions.refresh(first.refreshToken as string, { rotate: true }, client)
  t.equal(last.refreshTokenMaxAge, 20 * 60, 'then it expires with the session, two hours after the login')
  clock.advance(20 * 60_000 - 1)
  const kept = await sessions.refresh(last.refreshToken as string, { rotate: false }, client)
  t.match(kept, { userId }, 'the session lives up to its end')
  clock.advance(1)
  await t.rejects(sessions.refresh(last.refreshToken as string, { rotate: true }, client), { code: 'INVALID_REFRESH_TOKEN' }, 'and not a moment past it')
})

t.test('sensitive actions need a password proof within REAUTH_MAX_AGE; re-authentication renews it', async (t) => {
  const { sessions, userId, clock } = await setUp(t)
  const { sessionId } = await sessions.start(userId, client, password)
  await t.resolves(sessions.requireFresh(sessionId), 'fresh at login')
  clock.advance(300_001)
  await t.rejects(sessions.requireFresh(sessionId), { code: 'REAUTHENTICATION_REQUIRED' })
  await sessions.markAuthenticated(sessionId, ['password'])
  await t.resolves(sessions.requireFresh(sessionId), 'fresh again after the proof')
  t.equal((await sessions.authenticatedAt(sessionId)).getTime(), clock.now())
  await t.rejects(sessions.authenticatedAt('no such session'), { code: 'SESSION_REVOKED' })
})

t.test('logout ends the session of its refresh token, once; a user can end only their own sessions', async (t) => {
  const { sessions, userId, newUser, events } = await setUp(t)
  const { refreshToken, sessionId } = await sessions.start(userId, client, password)
  await sessions.end(refreshToken, client)
  await sessions.end(refreshToken, client)
  t.same(events.map(event => event.subject), [{ userId, sessionId, detail: { reason: 'logout' } }], 'one event: the second logout changed nothing')
  await t.rejects(sessions.refresh(refreshToken, { rotate: true }, client), { code: 'INVALID_REFRESH_TOKEN' })

  const other = await sessions.start(userId, client, password)
  await t.rejects(sessions.endOne(await newUser('stranger@example.com'), other.sessionId, client), { code: 'SESSION_NOT_FOUND' })
  await sessions.endOne(userId, other.sessionId, client)
  await t.rejects(sessions.refresh(other.refreshToken, { rotate: true }, client), { code: 'INVALID_REFRESH_TOKEN' })
})

t.test('ending all sessions but the current one counts the live ones and keeps the current', async (t) => {
  const { sessions, userId, events } = await setUp(t)
  const current = await sessions.start(userId, client, password)
  const others = [await sessions.start(userId, client, password), await sessions.start(userId, client, password)]
  t.equal(await sessions.endAll(userId, client, { exceptSessionId: current.sessionId }), 2)
  for (const other of others) await t.rejects(sessions.refresh(other.refreshToken, { rotate: false }, client), { code: 'INVALID_REFRESH_TOKEN' })
  await t.resolves(sessions.refresh(current.refreshToken, { rotate: false }, client))
  t.equal(await sessions.endAll(userId, client, { exceptSessionId: current.sessionId }), 0)
  t.equal(events.length, 1, 'nothing ended, no event')
})

t.test('renew after a password change rotates the session\'s own refresh token, and only that', async (t) => {
  const { sessions, userId } = await setUp(t)
  const session = await sessions.start(userId, client, password)
  const other = await sessions.start(userId, client, password)
  const claims = { userId, sessionId: session.sessionId }
  t.type((await sessions.renew(claims, session.refreshToken, client)).refreshToken, 'string', 'its own token is rotated')
  const foreign = await sessions.renew(claims, other.refreshToken, client)
  t.equal(foreign.refreshToken, undefined, 'another session\'s token is left alone')
  t.same(JSON.parse(foreign.accessToken), claims)
  await t.resolves(sessions.refresh(other.refreshToken, { rotate: false }, client), 'and still valid')
})

t.test('a session remembers how it was signed in; a step-up adds its methods; a second factor is one of them or not', async (t) => {
  const { sessions, userId } = await setUp(t)
  const { sessionId } = await sessions.start(userId, client, password)
  await t.rejects(sessions.requireSecondFactor(sessionId), { code: 'SECOND_FACTOR_REQUIRED' }, 'a password alone')
  await sessions.markAuthenticated(sessionId, ['password'])
  await t.rejects(sessions.requireSecondFactor(sessionId), { code: 'SECOND_FACTOR_REQUIRED' }, 'nor twice')
  await sessions.markAuthenticated(sessionId, ['passkey'])
  await sessions.requireSecondFactor(sessionId)
  await sessions.markAuthenticated(sessionId, ['password'])
  t.same((await sessions.proof(sessionId)).methods, ['password', 'passkey'], 'added, never replaced')
  const withCode = await sessions.start(userId, client, { methods: ['provider', 'recovery_code'] })
  await sessions.requireSecondFactor(withCode.sessionId)
  await t.rejects(sessions.requireSecondFactor('gone'), { code: 'SESSION_REVOKED' })
})

t.test('an activated organisation rides in the access token and in every refresh while the membership lasts, with its current role', async (t) => {
  const { store, sessions, userId, joinNew, membershipReads } = await setUp(t)
  const acme = await joinNew('acme', userId, 'admin')
  await joinNew('other', userId, 'member')
  const started = await sessions.start(userId, client, password)
  const claims = JSON.parse(started.accessToken) as AccessTokenClaims
  t.equal(claims.org, undefined, 'a new session has no active organisation')

  const activated = await sessions.activateOrganisation(claims, acme)
  t.match(JSON.parse(activated.accessToken), { userId, sessionId: started.sessionId, org: { id: acme, slug: 'acme', role: 'admin' }, status: Object })
  const readsAfterActivation = membershipReads()

  const refreshed = await sessions.refresh(started.refreshToken, { rotate: true }, client)
  t.same(JSON.parse(refreshed.accessToken).org, { id: acme, slug: 'acme', role: 'admin' }, 'a rotating refresh keeps it')

  await store.changeMemberRole(acme, userId, 'member', new Date())
  const demoted = await sessions.refresh(refreshed.refreshToken as string, { rotate: false }, client)
  t.same(JSON.parse(demoted.accessToken).org, { id: acme, slug: 'acme', role: 'member' }, 'the next refresh (without rotation) shows the new role')
  t.equal(membershipReads(), readsAfterActivation, 'a refresh reads the membership with the refresh token, not apart')

  await store.removeMember(acme, userId)
  const removed = await sessions.refresh(refreshed.refreshToken as string, { rotate: true }, client)
  t.equal(JSON.parse(removed.accessToken).org, undefined, 'after removal the next refresh has no org')
  t.equal((await store.findSession(started.sessionId))?.activeOrgId, null, 'and the session forgets it')
})

t.test('deactivating drops the organisation from the token and from later refreshes', async (t) => {
  const { sessions, userId, joinNew } = await setUp(t)
  const acme = await joinNew('acme', userId, 'member')
  const started = await sessions.start(userId, client, password)
  const activated = await sessions.activateOrganisation(JSON.parse(started.accessToken) as AccessTokenClaims, acme)
  const deactivated = await sessions.deactivateOrganisation(JSON.parse(activated.accessToken) as AccessTokenClaims)
  t.equal(JSON.parse(deactivated.accessToken).org, undefined)
  t.match(JSON.parse(deactivated.accessToken), { userId, sessionId: started.sessionId, status: Object }, 'the rest of the claims stay')
  const refreshed = await sessions.refresh(started.refreshToken, { rotate: true }, client)
  t.equal(JSON.parse(refreshed.accessToken).org, undefined)
})

t.test('activating an organisation one is not a member of is 404 ORG_NOT_FOUND and changes nothing', async (t) => {
  const { sessions, userId, newUser, joinNew } = await setUp(t)
  const stranger = await newUser('stranger@example.com')
  const theirs = await joinNew('theirs', stranger, 'admin')
  const mine = await joinNew('mine', userId, 'admin')
  const started = await sessions.start(userId, client, password)
  const claims = JSON.parse(started.accessToken) as AccessTokenClaims
  await sessions.activateOrganisation(claims, mine)
  await t.rejects(sessions.activateOrganisation(claims, theirs), { code: 'ORG_NOT_FOUND', statusCode: 404 })
  const refreshed = await sessions.refresh(started.refreshToken, { rotate: true }, client)
  t.same(JSON.parse(refreshed.accessToken).org, { id: mine, slug: 'mine', role: 'admin' }, 'the active organisation stays the one before')
})

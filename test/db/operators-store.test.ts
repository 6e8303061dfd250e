import t from 'tap'
import { testStore } from '../fixtures/database.js'

const newUser = (email: string, names: Partial<{ firstName: string, lastName: string, username: string | null }> = {}) =>
  ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash', ...names })
const later = (milliseconds: number) => new Date(Date.now() + milliseconds)

t.test('a new user has the role user, is enabled and has never logged in; the role changes', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  t.match(ada, { role: 'user', disabledAt: null, lastLoginAt: null })
  t.equal(await store.setUserRole(ada.id, 'admin', new Date()), true)
  t.equal((await store.findUserById(ada.id))?.role, 'admin')
  t.equal(await store.setUserRole(9999, 'admin', new Date()), false)
})

t.test('a login\'s session sets last_login_at; an app\'s grant session does not', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const at = new Date(Date.now() - 5000)
  await store.startSession({ id: 'grant', userId: ada.id, userAgent: null, ip: null, login: false },
    { tokenHash: 'h0', userId: ada.id, familyId: 'grant', expiresAt: later(60_000) }, at)
  t.equal((await store.findUserById(ada.id))?.lastLoginAt, null)
  await store.startSession({ id: 's1', userId: ada.id, userAgent: null, ip: null }, { tokenHash: 'h1', userId: ada.id, familyId: 's1', expiresAt: later(60_000) }, at)
  t.equal((await store.findUserById(ada.id))?.lastLoginAt?.getTime(), at.getTime())
})

t.test('search: email, names and username, ignoring case, wildcards literal, paged by id', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('ada@example.com', { username: 'Countess' }))
  const bob = await store.createUser(newUser('bob@example.org', { firstName: 'Bob', lastName: 'Babbage' }))
  const grace = await store.createUser(newUser('grace_h@navy.mil', { firstName: 'Grace', lastName: 'Hopper' }))
  const ids = async (search: Parameters<typeof store.searchUsers>[0]) => (await store.searchUsers(search)).map(user => user.id)
  t.same(await ids({ limit: 10 }), [ada.id, bob.id, grace.id], 'no query: everyone, in id order')
  t.same(await ids({ limit: 10, query: 'EXAMPLE' }), [ada.id, bob.id], 'email, ignoring case')
  t.same(await ids({ limit: 10, query: 'countess' }), [ada.id], 'username, ignoring case')
  t.same(await ids({ limit: 10, query: 'babb' }), [bob.id], 'last name')
  t.same(await ids({ limit: 10, query: 'grace' }), [grace.id], 'first name')
  t.same(await ids({ limit: 10, query: '_' }), [grace.id], 'an underscore is an underscore, not any character')
  t.same(await ids({ limit: 10, query: '%' }), [], 'a percent sign is a percent sign')
  t.same(await ids({ limit: 10, query: 'nobody' }), [])
  t.same(await ids({ limit: 2 }), [ada.id, bob.id], 'limit')
  t.same(await ids({ limit: 2, afterId: bob.id }), [grace.id], 'the next page after the last id')
  t.same(await ids({ limit: 2, afterId: ada.id, query: 'example' }), [bob.id], 'paging a search')
})

t.test('disabling revokes every session of the user in the same transaction, with its log rows; enabling clears it', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  const start = async (id: string, userId: number) => {
    await store.startSession({ id, userId, userAgent: null, ip: null }, { tokenHash: `hash-${id}`, userId, familyId: id, expiresAt: later(60_000) }, new Date())
  }
  await start('a1', ada.id)
  await start('a2', ada.id)
  await start('b1', bob.id)
  const before = await store.readRevocations(0, new Date(0), 100)
  await store.createMfaChallenge({ tokenHash: 'mfa', userId: ada.id, expiresAt: later(60_000) }, new Date(), 5)
  const disabledAt = new Date()
  t.equal(await store.disableUser(ada.id, disabledAt), 2, 'two sessions revoked')
  t.equal((await store.findUserById(ada.id))?.disabledAt?.getTime(), disabledAt.getTime())
  t.equal(await store.sessionState('a1', new Date()), 'revoked')
  t.equal(await store.sessionState('a2', new Date()), 'revoked')
  t.equal(await store.sessionState('b1', new Date()), 'live', 'another user\'s session stays')
  const logged = (await store.readRevocations(before.at(-1)?.seq ?? 0, new Date(0), 100)).map(row => row.sessionId).sort()
  t.same(logged, ['a1', 'a2'], 'the revocation log tells every instance')
  t.ok((await store.findMfaChallenge('mfa'))?.usedAt, 'a login waiting for its second step ends too')
  t.match(await store.findRefreshToken('hash-a1'), { userDisabledAt: Date }, 'a refresh token is found with its user\'s state')
  t.match(await store.findRefreshToken('hash-b1'), { userDisabledAt: null })

  t.equal(await store.disableUser(ada.id, later(10_000)), 0, 'disabling again revokes nothing more')
  t.equal((await store.findUserById(ada.id))?.disabledAt?.getTime(), disabledAt.getTime(), 'and keeps the first date')
  t.equal(await store.disableUser(9999, new Date()), undefined, 'no such user')

  t.equal(await store.enableUser(ada.id, new Date()), true)
  t.equal((await store.findUserById(ada.id))?.disabledAt, null)
  t.equal(await store.sessionState('a1', new Date()), 'revoked', 'enabling brings no session back')
  t.equal(await store.enableUser(9999, new Date()), false)
})

t.test('the audit trail across users: filtered by user and type, paged by id, with the acting admin kept after its deletion', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  const admin = await store.createUser(newUser('admin@example.com'))
  const record = async (type: string, userId: number | null, actorId?: number, detail: Record<string, unknown> | null = null) => {
    await store.recordSecurityEvent({ type, userId, actorId, sessionId: null, ip: null, userAgent: null, requestId: null, detail, createdAt: new Date() })
  }
  await record('login', ada.id)
  await record('login', bob.id)
  await record('account_disabled', bob.id, admin.id)
  await record('admin_user_deleted', null, admin.id, { user_id: 42 })
  const all = await store.searchSecurityEvents({ limit: 10 })
  t.same(all.map(event => event.type), ['admin_user_deleted', 'account_disabled', 'login', 'login'], 'every user\'s, newest first')
  t.match(all[1], { userId: bob.id, actorId: admin.id })
  t.match(all[0], { userId: null, actorId: admin.id, detail: { user_id: 42 } })
  t.equal(all[3].actorId, null, 'a user\'s own event has no actor')
  t.same((await store.searchSecurityEvents({ limit: 10, userId: bob.id })).map(event => event.type), ['account_disabled', 'login'])
  t.same((await store.searchSecurityEvents({ limit: 10, type: 'login' })).map(event => event.userId), [bob.id, ada.id])
  t.same((await store.searchSecurityEvents({ limit: 10, type: 'login', userId: ada.id })).map(event => event.userId), [ada.id])
  const firstPage = await store.searchSecurityEvents({ limit: 2 })
  t.same((await store.searchSecurityEvents({ limit: 10, beforeId: firstPage[1].id })).map(event => event.type), ['login', 'login'], 'the next page')
  t.same((await store.listSecurityEvents(bob.id, { limit: 10 })).map(event => event.actorId), [admin.id, null], 'a user\'s own listing carries the actor too')

  await store.deleteUser(bob.id)
  const kept = await store.searchSecurityEvents({ limit: 10 })
  t.same(kept.map(event => event.type), ['admin_user_deleted', 'account_disabled', 'login'], 'a deleted user\'s own events go, an admin\'s action on it stays')
  t.match(kept[1], { userId: null, actorId: admin.id })
  await store.deleteUser(admin.id)
  const after = await store.searchSecurityEvents({ limit: 10 })
  t.equal(after.length, 3, 'the admin\'s actions stay when the admin is deleted')
  t.match(after[1], { type: 'account_disabled', userId: null, actorId: null })
})

t.test('pruning keeps the audit trail (an actor, or an admin action\'s type) until its own limit', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const admin = await store.createUser(newUser('admin@example.com'))
  const old = later(-100 * 86_400_000)
  const event = { userId: ada.id, sessionId: null, ip: null, userAgent: null, requestId: null, detail: null, createdAt: old }
  await store.recordSecurityEvent({ ...event, type: 'login' })
  await store.recordSecurityEvent({ ...event, type: 'account_disabled', actorId: admin.id })
  // The CLI acts with no actor; its action is still the audit trail's by its type.
  await store.recordSecurityEvent({ ...event, type: 'role_changed' })
  const audit = { olderThan: later(-365 * 86_400_000), types: ['account_disabled', 'role_changed'] }
  t.equal(await store.pruneSecurityEvents(later(-30 * 86_400_000), 10, audit), 1, 'the login only')
  t.same((await store.listSecurityEvents(ada.id, { limit: 10 })).map(row => row.type).sort(), ['account_disabled', 'role_changed'])
  t.equal(await store.pruneSecurityEvents(later(-30 * 86_400_000), 10, { ...audit, olderThan: later(-50 * 86_400_000) }), 2, 'past the audit\'s limit too')
})

t.test('countActiveAdmins counts the enabled admins only', async (t) => {
  const store = await testStore(t)
  const [ada, bob, eve] = [await store.createUser(newUser('a@example.com')), await store.createUser(newUser('b@example.com')), await store.createUser(newUser('e@example.com'))]
  t.equal(await store.countActiveAdmins(), 0)
  await store.setUserRole(ada.id, 'admin', new Date())
  await store.setUserRole(bob.id, 'admin', new Date())
  t.equal(await store.countActiveAdmins(), 2)
  await store.disableUser(bob.id, new Date())
  t.equal(await store.countActiveAdmins(), 1, 'a disabled admin does not count')
  t.equal(eve.role, 'user')
})

t.test('a session keeps how it was signed in (amr); re-authentication replaces it only when given', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  await store.startSession({ id: 's1', userId: ada.id, userAgent: null, ip: null, amr: 'password' },
    { tokenHash: 'h1', userId: ada.id, familyId: 's1', expiresAt: later(60_000) }, new Date())
  t.equal((await store.findSession('s1'))?.amr, 'password')
  await store.markSessionAuthenticated('s1', new Date())
  t.equal((await store.findSession('s1'))?.amr, 'password', 'unchanged without amr')
  await store.markSessionAuthenticated('s1', new Date(), 'password passkey')
  t.equal((await store.findSession('s1'))?.amr, 'password passkey')
  t.equal((await store.listLiveSessions(ada.id, new Date()))[0].amr, 'password passkey')
})

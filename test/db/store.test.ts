import Database from 'better-sqlite3'
import t from 'tap'
import { DuplicateValueError } from '../../db/store.js'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { loggedInUser, registerUser } from '../fixtures/factories.js'
import { onPostgres, selectAll, testDatabaseUrl, testStore } from '../fixtures/database.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

const SQLITE_ONLY = onPostgres && 'locks the SQLite file from beside the service'

const newUser = (email: string, username: string | null = null) => ({ firstName: 'Ada', lastName: 'Lovelace', username, email, passwordHash: 'hash' })

t.test('a restart keeps every user, session and the signing key', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const first = await build(t, { variant: 'cookie', hashing: 'stored', env: { DATABASE_URL: onPostgres ? databaseUrl : `file:${databaseUrl}` } })
  const session = await loggedInUser(first, 'cookie')
  await first.close()

  const second = await build(t, { variant: 'cookie', hashing: 'stored', env: { DATABASE_URL: databaseUrl } })
  const read = await second.inject({ method: 'GET', url: `/users/${session.user.id}`, cookies: { accessToken: session.accessToken } })
  t.equal(read.statusCode, 200, 'the access token still verifies: the key was kept')
  const refresh = await second.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })
  t.equal(refresh.statusCode, 200, 'the session was kept')
  const login = await second.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })
  t.equal(login.statusCode, 200)
})

t.test('the store keeps only a hash of each refresh token', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', hashing: 'stored', env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, 'header')
  // Read the tables as an operator would, around the service.
  const rows = await selectAll<{ token_hash: string }>(t, databaseUrl, 'select token_hash from refresh_tokens')
  t.equal(rows.length, 1)
  t.not(rows[0].token_hash, session.refreshToken)
  const [user] = await selectAll<{ password_hash: string }>(t, databaseUrl, 'select password_hash from users')
  t.match(user.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, 'argon2id with OWASP parameters')
})

t.test('emails are unique; usernames unique ignoring case; null usernames never collide', async (t) => {
  const store = await testStore(t)
  await store.createUser(newUser('a@example.com', 'Ada'))
  await store.createUser(newUser('b@example.com'))
  await store.createUser(newUser('c@example.com'))
  await t.rejects(store.createUser(newUser('a@example.com')), new DuplicateValueError('email'))
  await t.rejects(store.createUser(newUser('d@example.com', 'ADA')), new DuplicateValueError('username'))
  const updated = await store.updateUser(3, { username: 'grace' })
  t.equal(updated?.username, 'grace')
  t.equal(await store.updateUser(99, { username: 'nobody' }), undefined)
})

t.test('rotation succeeds once: a second rotation of the same token writes nothing', async (t) => {
  const store = await testStore(t)
  const user = await store.createUser(newUser('a@example.com'))
  const now = new Date()
  await store.startSession({ id: 'f', userId: user.id, userAgent: null, ip: null }, { tokenHash: 'h0', userId: user.id, familyId: 'f', expiresAt: new Date(now.getTime() + 60_000) }, now)
  t.ok(await store.claimStatusIndex('f', 7))
  const rules = { refreshTokenTtlMs: 60_000, sessionMaxAgeMs: 3_600_000 }
  const later = new Date(now.getTime() + 1000)
  t.same(await store.rotateRefreshToken({ previousHash: 'h0', successorHash: 'h1', now: later, ...rules }),
    { userId: user.id, familyId: 'f', statusIndex: 7, expiresAt: new Date(later.getTime() + 60_000), activeOrgId: null, activeMembership: null }, 'the session, its status index and the successor\'s expiry')
  t.equal(await store.rotateRefreshToken({ previousHash: 'h0', successorHash: 'h2', now: later, ...rules }), undefined)
  t.equal(await store.findRefreshToken('h2'), undefined)
  t.match(await store.findRefreshToken('h0'), { replacedBy: 'h1', rotatedAt: later })
  t.match(await store.findRefreshToken('h1'), { familyId: 'f', userId: user.id, rotatedAt: null, revokedAt: null, expiresAt: new Date(later.getTime() + 60_000) })
})

t.test('a session\'s active organisation is read with its refresh tokens, with the membership as it stands, until cleared', async (t) => {
  const store = await testStore(t)
  const user = await store.createUser(newUser('a@example.com'))
  const now = new Date()
  const rules = { refreshTokenTtlMs: 60_000, sessionMaxAgeMs: 3_600_000 }
  const org = await store.createOrganisation({ name: 'Acme', slug: 'acme', ownerId: user.id }, now)
  await store.startSession({ id: 'f', userId: user.id, userAgent: null, ip: null }, { tokenHash: 'h0', userId: user.id, familyId: 'f', expiresAt: new Date(now.getTime() + 60_000) }, now)
  t.match(await store.findRefreshToken('h0'), { activeOrgId: null, activeMembership: null }, 'a new session has none')
  await store.setActiveOrganisation('f', org.id)
  t.match(await store.findRefreshToken('h0'), { activeOrgId: org.id, activeMembership: { slug: 'acme', role: 'owner' } })
  t.match(await store.rotateRefreshToken({ previousHash: 'h0', successorHash: 'h1', now, ...rules }), { familyId: 'f', activeOrgId: org.id, activeMembership: { slug: 'acme', role: 'owner' } })
  await store.deleteOrganisation(org.id)
  t.match(await store.findRefreshToken('h1'), { activeOrgId: org.id, activeMembership: null }, 'the membership gone: none holds')
  t.match(await store.rotateRefreshToken({ previousHash: 'h1', successorHash: 'h2', now, ...rules }), { activeOrgId: org.id, activeMembership: null })
  await store.setActiveOrganisation('f', null)
  t.match(await store.findRefreshToken('h2'), { activeOrgId: null, activeMembership: null }, 'cleared')
  await store.setActiveOrganisation('no-such-session', org.id)
  t.equal(await store.findSession('no-such-session'), undefined, 'an unknown session changes nothing')
})

t.test('a rotation claims only a live token of a live session of an enabled user (the expected one): else it writes nothing', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  const start = new Date()
  const hour = 3_600_000
  const rules = { refreshTokenTtlMs: hour, sessionMaxAgeMs: 2 * hour }
  for (const [id, userId] of [['expired', ada.id], ['revoked', ada.id], ['old', ada.id], ['bobs', bob.id], ['other', ada.id], ['short', ada.id]] as const) {
    await store.startSession({ id, userId, userAgent: null, ip: null }, { tokenHash: `${id}-0`, userId, familyId: id, expiresAt: new Date(start.getTime() + 3 * hour) }, start)
  }
  await store.createRefreshToken({ tokenHash: 'expired-1', userId: ada.id, familyId: 'expired', expiresAt: start })
  await store.revokeFamily('revoked', start)
  await store.disableUser(bob.id, start)
  const at = (ms: number) => new Date(start.getTime() + ms)
  const refused = {
    'an expired token': await store.rotateRefreshToken({ previousHash: 'expired-1', successorHash: 'n1', now: at(1), ...rules }),
    'a revoked token': await store.rotateRefreshToken({ previousHash: 'revoked-0', successorHash: 'n2', now: at(1), ...rules }),
    'a session past SESSION_MAX_AGE': await store.rotateRefreshToken({ previousHash: 'old-0', successorHash: 'n3', now: at(2 * hour), ...rules }),
    'a disabled user\'s token': await store.rotateRefreshToken({ previousHash: 'bobs-0', successorHash: 'n4', now: at(1), ...rules }),
    'another user\'s token': await store.rotateRefreshToken({ previousHash: 'other-0', successorHash: 'n5', now: at(1), ...rules, expectedUserId: bob.id })
  }
  for (const [what, outcome] of Object.entries(refused)) t.equal(outcome, undefined, what)
  for (const hash of ['n1', 'n2', 'n3', 'n4', 'n5']) t.equal(await store.findRefreshToken(hash), undefined, `no successor ${hash}`)
  t.match(await store.findRefreshToken('old-0'), { rotatedAt: null }, 'nothing marked')

  const own = await store.rotateRefreshToken({ previousHash: 'other-0', successorHash: 'n6', now: at(1), ...rules, expectedUserId: ada.id })
  t.equal(own?.familyId, 'other', 'the expected user\'s own token rotates')
  const nearEnd = await store.rotateRefreshToken({ previousHash: 'short-0', successorHash: 'n7', now: at(2 * hour - 60_000), ...rules })
  t.same(nearEnd?.expiresAt, at(2 * hour), 'a successor never outlives its session (SESSION_MAX_AGE from its start)')
})

t.test('a store locked by another writer answers 503, and the service recovers when the lock goes', { skip: SQLITE_ONLY }, async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { variant: 'cookie', hashing: 'stored', env: { DATABASE_URL: databaseUrl } })
  await registerUser(server, 'cookie')
  const locker = new Database(databaseUrl)
  t.teardown(() => locker.close())
  locker.pragma('busy_timeout = 0')
  locker.exec('BEGIN EXCLUSIVE')
  const started = Date.now()
  const blocked = await server.inject({ method: 'POST', url: '/auth/register', payload: { first_name: 'A', last_name: 'B', username: 'blocked', email: 'blocked@example.com', password: 'long enough pw' } })
  assertError(t, blocked, 503, 'STORE_UNAVAILABLE')
  t.ok(Date.now() - started >= 1500, 'it waited for the lock before giving up')
  locker.exec('ROLLBACK')
  const retried = await server.inject({ method: 'POST', url: '/auth/register', payload: { first_name: 'A', last_name: 'B', username: 'blocked', email: 'blocked@example.com', password: 'long enough pw' } })
  t.equal(retried.statusCode, 201)
})

t.test('revoking a user\'s sessions can spare the one that asked, and touches no other user', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  const expiresAt = new Date(Date.now() + 60_000)
  for (const [tokenHash, userId, familyId] of [['a1', ada.id, 'fa1'], ['a2', ada.id, 'fa2'], ['a3', ada.id, 'fa3'], ['b1', bob.id, 'fb1']] as const) {
    await store.createRefreshToken({ tokenHash, userId, familyId, expiresAt })
  }
  t.equal(await store.revokeUserSessions(ada.id, new Date(), { exceptFamilyId: 'fa1' }), 2)
  t.equal((await store.findRefreshToken('a1'))?.revokedAt, null, 'the sparing session lives')
  t.ok((await store.findRefreshToken('a2'))?.revokedAt)
  t.ok((await store.findRefreshToken('a3'))?.revokedAt)
  t.equal((await store.findRefreshToken('b1'))?.revokedAt, null, 'another user is untouched')
  t.equal(await store.revokeUserSessions(ada.id, new Date()), 1, 'then the last one; revoked ones are not counted again')
  t.equal(await store.revokeUserSessions(ada.id, new Date()), 0)
})

t.test('deleting a user takes their refresh tokens; users list in pages by id', async (t) => {
  const store = await testStore(t)
  const created = []
  for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) created.push(await store.createUser(newUser(email)))
  await store.createRefreshToken({ tokenHash: 'h', userId: created[1].id, familyId: 'f', expiresAt: new Date(Date.now() + 60_000) })
  t.same((await store.listUsers({ limit: 2 })).map((user) => user.email), ['a@example.com', 'b@example.com'])
  t.same((await store.listUsers({ limit: 2, afterId: created[1].id })).map((user) => user.email), ['c@example.com'])
  t.equal(await store.deleteUser(created[1].id), true)
  t.equal(await store.deleteUser(created[1].id), false, 'a second delete finds nothing')
  t.equal(await store.findRefreshToken('h'), undefined, 'the session went with the user')
  t.same((await store.listUsers({ limit: 10 })).map((user) => user.email), ['a@example.com', 'c@example.com'])
})

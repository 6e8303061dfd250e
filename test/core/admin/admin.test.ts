import { Readable } from 'node:stream'
import t, { type Test } from 'tap'
import { createUserImport } from '../../../core/accounts/import.js'
import { AUDITED_SKIPPED_LINES, createAdmin, type AdminActor } from '../../../core/admin/admin.js'
import type { UserRecord } from '../../../db/store.js'
import { createSecurityEvents } from '../../../core/events/security-events.js'
import { silentLogger } from '../../../core/logger.js'
import type { MfaStatus } from '../../../core/schemas/mfa.js'
import { ReauthenticationRequiredError, SecondFactorRequiredError } from '../../../core/errors.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

const client = { ip: '203.0.113.7', userAgent: 'Firefox', requestId: 'req-1' }
const OPTIONS = { requireMfa: true, publicUrl: 'https://accounts.example.com', passwordResetTtlSeconds: 1800, emailVerificationTtlSeconds: 86400 }

async function setUp (t: Test, { requireMfa = true, fresh = true, factors = { totp: false, passkeys: false }, secondFactorUsed = true } = {}) {
  const store = await testStore(t)
  const clock = testClock()
  const status: MfaStatus = { ...factors, recoveryCodesLeft: 0 }
  const emitted: string[] = []
  const shown: UserRecord[] = []
  const admin = createAdmin({
    store,
    clock,
    sessions: { requireFresh: async () => { if (!fresh) throw new ReauthenticationRequiredError() }, requireSecondFactor: async () => { if (!secondFactorUsed) throw new SecondFactorRequiredError() } },
    securityEvents: createSecurityEvents({ store, clock, log: silentLogger }),
    mfa: { status: async () => status },
    mailer: { forOutbox: (message) => message, wake () {}, enqueue: async () => {} },
    webhooks: {
      userEvent: (type) => (user) => {
        emitted.push(`${type} ${user.email}`)
        shown.push(user)
        return undefined
      },
      wake () {}
    },
    userImport: createUserImport({ store, clock })
  }, { ...OPTIONS, requireMfa })
  const newUser = (email: string) => store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })
  return { store, admin, newUser, emitted, shown }
}

t.test('authorize: admins only; a second factor (TOTP or a passkey) under requireMfa; a fresh session for a change', async (t) => {
  const { store, admin, newUser } = await setUp(t)
  const user = await newUser('a@example.com')
  await t.rejects(admin.authorize(user, 's', { change: false }), { code: 'FORBIDDEN' })
  await store.setUserRole(user.id, 'admin', new Date())
  const promoted = { ...user, role: 'admin' as const }
  await t.rejects(admin.authorize(promoted, 's', { change: false }), { code: 'MFA_ENROLLMENT_REQUIRED' })

  const withPasskey = await setUp(t, { factors: { totp: false, passkeys: true } })
  t.equal((await withPasskey.admin.authorize(promoted, 's', { change: true })).id, user.id, 'a passkey is a second factor')
  const withTotp = await setUp(t, { factors: { totp: true, passkeys: false } })
  t.ok(await withTotp.admin.authorize(promoted, 's', { change: true }), 'so is TOTP')
  const passwordOnly = await setUp(t, { factors: { totp: false, passkeys: true }, secondFactorUsed: false })
  await t.rejects(passwordOnly.admin.authorize(promoted, 's', { change: false }), { code: 'SECOND_FACTOR_REQUIRED' }, 'owned but not used in this session')
  const optional = await setUp(t, { requireMfa: false })
  t.ok(await optional.admin.authorize(promoted, 's', { change: true }), 'without ADMIN_REQUIRE_MFA none is needed')
  const stale = await setUp(t, { requireMfa: false, fresh: false })
  t.ok(await stale.admin.authorize(promoted, 's', { change: false }), 'a stale session reads')
  await t.rejects(stale.admin.authorize(promoted, 's', { change: true }), { code: 'REAUTHENTICATION_REQUIRED' }, 'but changes nothing')
})

t.test('searchUsers gives a cursor only when another page follows', async (t) => {
  const { admin, newUser } = await setUp(t)
  const users = [await newUser('a@example.com'), await newUser('b@example.com'), await newUser('c@example.com')]
  const first = await admin.searchUsers({ limit: 2 })
  t.same(first.users.map(user => user.id), [users[0].id, users[1].id])
  t.equal(first.nextAfterId, users[1].id)
  const last = await admin.searchUsers({ limit: 2, afterId: first.nextAfterId ?? undefined })
  t.same(last.users.map(user => user.id), [users[2].id])
  t.equal(last.nextAfterId, null)
  t.equal((await admin.searchUsers({ limit: 3 })).nextAfterId, null, 'exactly a page: no cursor')
})

t.test('every action is an event of its target with the admin as actor; 404 for a user that is not there', async (t) => {
  const { store, admin, newUser, emitted } = await setUp(t)
  const boss = await newUser('boss@example.com')
  const ada = await newUser('ada@example.com')
  const actor = { adminId: boss.id, client }
  await admin.disable(actor, ada.id)
  await admin.enable(actor, ada.id)
  await admin.endSessions(actor, ada.id)
  await admin.resetMfa(actor, ada.id)
  const created = await admin.createUser(actor, { firstName: 'Bob', lastName: 'B', email: 'bob@example.com', username: null, role: 'admin', invite: true })
  t.match(created, { role: 'admin', passwordHash: null })
  t.equal((await store.searchSecurityEvents({ limit: 10, type: 'admin_user_created' }))[0].detail?.invited, true, 'the invitation was written with its token')
  await admin.deleteUser(actor, ada.id)
  const trail = await store.searchSecurityEvents({ limit: 20 })
  t.same(trail.map(event => event.type),
    ['admin_user_deleted', 'admin_user_created', 'role_changed', 'admin_mfa_reset', 'admin_sessions_revoked', 'account_enabled', 'account_disabled'])
  t.ok(trail.every(event => event.actorId === boss.id && event.ip === client.ip))
  t.match(trail[0], { userId: null, detail: { user_id: ada.id, email: 'ada@example.com' } })
  t.same(emitted, ['user.deleted ada@example.com'], 'the deletion is sent as user.deleted (the other actions go through their events)')
  for (const action of [admin.disable, admin.enable, admin.endSessions, admin.resetMfa, admin.deleteUser] as Array<(actor: AdminActor, id: number) => Promise<unknown>>) {
    await t.rejects(action(actor, ada.id), { code: 'USER_NOT_FOUND' })
  }
  await t.rejects(admin.userDetails(ada.id), { code: 'USER_NOT_FOUND' })
})

t.test('a role change is an event of its target (role_changed, the admin as actor) and sends the user as changed (user.updated)', async (t) => {
  const { store, admin, newUser, emitted, shown } = await setUp(t)
  const boss = await newUser('boss@example.com')
  const ada = await newUser('ada@example.com')
  const actor = { adminId: boss.id, client }
  t.match(await admin.changeRole(actor, ada.id, 'admin'), { user: { id: ada.id, role: 'admin' }, changed: true })
  t.equal((await store.findUserById(ada.id))?.role, 'admin')
  t.match(await store.searchSecurityEvents({ limit: 10 }), [{ type: 'role_changed', userId: ada.id, actorId: boss.id, ip: client.ip, detail: { from: 'user', to: 'admin' } }])
  t.same(emitted, ['user.updated ada@example.com'])
  t.equal(shown[0].role, 'admin', 'the event shows the user as changed')
  t.match(await admin.changeRole(actor, ada.id, 'admin'), { changed: false }, 'the same role again')
  t.equal((await store.searchSecurityEvents({ limit: 10 })).length, 1, 'changes nothing and records nothing')
  t.equal(emitted.length, 1, 'and sends nothing')
  await t.rejects(admin.changeRole(actor, 999_999, 'admin'), { code: 'USER_NOT_FOUND' })
})

t.test('an import is an admin act of the audit trail: users_imported, with its counts and its first skipped lines', async (t) => {
  const { store, admin, newUser } = await setUp(t)
  const boss = await newUser('boss@example.com')
  const lines = ['{"email":"bob@example.com","first_name":"Bob","last_name":"B"}', ...Array.from({ length: AUDITED_SKIPPED_LINES + 2 }, () => 'not json')]
  const summary = await admin.importUsers({ adminId: boss.id, client }, { format: 'ndjson', chunks: Readable.from([lines.join('\n')]) })
  t.match(summary, { imported: 1, skipped_count: AUDITED_SKIPPED_LINES + 2 })
  t.ok(await store.findUserByEmail('bob@example.com'))
  const [audit] = await store.searchSecurityEvents({ limit: 10, type: 'users_imported' })
  t.match(audit, { userId: null, actorId: boss.id, detail: { format: 'ndjson', imported: 1, skipped: AUDITED_SKIPPED_LINES + 2, skipped_truncated: true } })
  t.equal((audit.detail?.skipped_lines as unknown[]).length, AUDITED_SKIPPED_LINES)
  await admin.importUsers({ adminId: null, client }, { format: 'json', users: [] })
  t.match((await store.searchSecurityEvents({ limit: 10, type: 'users_imported' }))[0], { actorId: null, detail: { format: 'json', imported: 0, skipped: 0 } }, "the CLI's, with no admin")
})

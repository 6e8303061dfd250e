import t from 'tap'
import type { NewSecurityEvent, UserRecord } from '../../db/store.js'
import { testStore } from '../fixtures/database.js'

/*
 * The rules that write twice write in one transaction (issue 35): a user made with a role and its role_changed
 * row, a role change and its row, a second factor reset and its admin_mfa_reset row, an account made by a
 * provider's sign-in (verified) and its identity. Each is made to fail at its second write (an audit row of
 * a user that does not exist breaks its foreign key, on both backends): nothing of the first may stay.
 */

const NO_SUCH_USER = 999_999
const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: null })
const auditRow = (type: string, userId: number): NewSecurityEvent =>
  ({ type, userId, actorId: null, sessionId: null, ip: null, userAgent: null, requestId: null, detail: { user_id: userId }, createdAt: new Date() })

t.test('a user made with a role is written with its audit row, or not at all', async (t) => {
  const store = await testStore(t)
  await t.rejects(store.createUser({ ...newUser('a@example.com'), role: 'admin' }, undefined, () => ({ event: auditRow('role_changed', NO_SUCH_USER) })))
  t.equal(await store.findUserByEmail('a@example.com'), undefined, 'no user without its audit row')

  const created = await store.createUser({ ...newUser('a@example.com'), role: 'admin' }, undefined, (user) => ({ event: auditRow('role_changed', user.id) }))
  t.equal(created.role, 'admin')
  t.equal((await store.findUserById(created.id))?.role, 'admin')
  t.same((await store.listSecurityEvents(created.id, { limit: 10 })).map(event => event.type), ['role_changed'])
})

t.test('a role change is written with its audit row, or not at all', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  await t.rejects(store.setUserRole(ada.id, 'admin', new Date(), { event: auditRow('role_changed', NO_SUCH_USER) }))
  t.equal((await store.findUserById(ada.id))?.role, 'user', 'the role did not change without its audit row')

  t.equal(await store.setUserRole(ada.id, 'admin', new Date(), { event: auditRow('role_changed', ada.id) }), true)
  t.equal((await store.findUserById(ada.id))?.role, 'admin')
  t.same((await store.listSecurityEvents(ada.id, { limit: 10 })).map(event => event.type), ['role_changed'])
  t.equal(await store.setUserRole(NO_SUCH_USER, 'admin', new Date(), { event: auditRow('role_changed', ada.id) }), false)
  t.equal((await store.listSecurityEvents(ada.id, { limit: 10 })).length, 1, 'no audit row for a user that is not there')
})

t.test('a role change is written with its audit row and its user.updated, or neither', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const userUpdated = (user: UserRecord) => ({ messageId: `msg_${user.id}`, type: 'user.updated', payload: JSON.stringify({ role: user.role }), createdAt: new Date() })
  await t.rejects(store.setUserRole(ada.id, 'admin', new Date(), { event: auditRow('role_changed', NO_SUCH_USER) }, userUpdated))
  t.equal(await store.countPendingWebhooks(), 0, 'no webhook without its change')
  t.equal(await store.setUserRole(ada.id, 'admin', new Date(), { event: auditRow('role_changed', ada.id) }, userUpdated), true)
  const [row] = await store.claimWebhooks(new Date(Date.now() + 1000), new Date(Date.now() + 60_000), 10)
  t.match(row, { messageId: `msg_${ada.id}`, type: 'user.updated', payload: '{"role":"admin"}' }, 'the user as changed')
  t.equal(await store.setUserRole(NO_SUCH_USER, 'user', new Date(), undefined, userUpdated), false)
  t.equal(await store.countPendingWebhooks(), 1, 'none for a user that is not there')
})

t.test('a second factor reset is written with its audit row, or not at all', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  await store.saveTotpSecret(ada.id, 'JBSWY3DPEHPK3PXP', new Date())
  t.equal(await store.confirmTotp(ada.id, 1, ['code-hash'], new Date()), true)
  await t.rejects(store.deleteTotp(ada.id, { event: auditRow('admin_mfa_reset', NO_SUCH_USER) }))
  t.not((await store.findTotp(ada.id))?.confirmedAt, null, 'TOTP is still on without its audit row')

  t.equal(await store.deleteTotp(ada.id, { event: auditRow('admin_mfa_reset', ada.id) }), true)
  t.equal(await store.findTotp(ada.id), undefined)
  t.same((await store.listSecurityEvents(ada.id, { limit: 10 })).map(event => event.type), ['admin_mfa_reset'])
})

t.test('an account made by a provider\'s sign-in is written verified with its identity, or not at all', async (t) => {
  const store = await testStore(t)
  const identity = { provider: 'google', subject: 'sub-1', email: 'a@example.com' }
  const first = await store.createUserWithIdentity({ ...newUser('a@example.com'), emailVerified: true }, identity, new Date())
  t.equal(first.emailVerified, true, 'verified in the same write')
  // The identity is taken: the second write of this sign-up fails.
  await t.rejects(store.createUserWithIdentity({ ...newUser('b@example.com'), emailVerified: true }, identity, new Date()))
  t.equal(await store.findUserByEmail('b@example.com'), undefined, 'no account without its identity')
})

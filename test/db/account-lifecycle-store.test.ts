import t from 'tap'
import { testStore } from '../fixtures/database.js'

const newUser = (email: string) => ({ firstName: 'Ada', lastName: 'Lovelace', username: null, email, passwordHash: 'hash' })
const later = (milliseconds: number) => new Date(Date.now() + milliseconds)

t.test('a new user is unverified; verification holds only for the address it was sent to; an email change can unverify', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  t.equal(ada.emailVerified, false)
  t.equal(ada.emailVerifiedAt, null)
  t.equal(await store.markEmailVerified(ada.id, 'old@example.com', new Date()), false, 'another address verifies nothing')
  t.equal(await store.markEmailVerified(ada.id, 'a@example.com', new Date()), true)
  t.match(await store.findUserById(ada.id), { emailVerified: true, emailVerifiedAt: Date })
  const changed = await store.updateUser(ada.id, { email: 'new@example.com', emailVerified: false, emailVerifiedAt: null })
  t.match(changed, { email: 'new@example.com', emailVerified: false, emailVerifiedAt: null })
  t.equal(await store.setPasswordHash(ada.id, 'new hash', new Date()), true)
  t.equal((await store.findUserById(ada.id))?.passwordHash, 'new hash')
  t.equal(await store.setPasswordHash(9999, 'new hash', new Date()), false)
})

t.test('a one-time token is used once, and a newer one of the same purpose voids it', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const token = (tokenHash: string, purpose: 'reset_password' | 'verify_email') => ({ tokenHash, userId: ada.id, purpose, email: ada.email, expiresAt: later(60_000) })
  await store.issueOneTimeToken(token('r1', 'reset_password'), new Date())
  await store.issueOneTimeToken(token('v1', 'verify_email'), new Date())
  t.match(await store.findOneTimeToken('r1'), { userId: ada.id, purpose: 'reset_password', email: 'a@example.com', usedAt: null })
  await store.issueOneTimeToken(token('r2', 'reset_password'), new Date())
  t.ok((await store.findOneTimeToken('r1'))?.usedAt, 'the older reset token is void')
  t.equal((await store.findOneTimeToken('v1'))?.usedAt, null, 'a token of another purpose is not')
  t.equal(await store.useOneTimeToken('r2', new Date()), true)
  t.equal(await store.useOneTimeToken('r2', new Date()), false, 'only once')
  t.equal(await store.useOneTimeToken('r1', new Date()), false)
  t.equal(await store.findOneTimeToken('nope'), undefined)
  await store.deleteUser(ada.id)
  t.equal(await store.findOneTimeToken('v1'), undefined, 'gone with the user')
})

t.test('sessions: listed while live, their state follows their refresh tokens', async (t) => {
  const store = await testStore(t)
  const ada = await store.createUser(newUser('a@example.com'))
  const bob = await store.createUser(newUser('b@example.com'))
  const start = async (id: string, userId: number, expiresAt = later(60_000)) => {
    await store.createSession({ id, userId, userAgent: 'UA', ip: '127.0.0.1' }, new Date())
    await store.createRefreshToken({ tokenHash: `hash-${id}`, userId, familyId: id, expiresAt })
  }
  await start('s1', ada.id)
  await start('s2', ada.id)
  await start('s3', ada.id, later(-1000))
  await start('b1', bob.id)
  t.same((await store.listLiveSessions(ada.id, new Date())).map(session => session.id).sort(), ['s1', 's2'])
  t.equal(await store.sessionState('s1', new Date()), 'live')
  t.equal(await store.sessionState('s3', new Date()), 'revoked', 'expired counts as ended')
  t.equal(await store.sessionState('nobody', new Date()), 'unknown')

  const touchedAt = later(5000)
  await store.touchSession('s1', touchedAt)
  t.same((await store.findSession('s1'))?.lastUsedAt, touchedAt)
  t.match(await store.findSession('s1'), { userId: ada.id, userAgent: 'UA', ip: '127.0.0.1' })

  await store.revokeFamily('s2', new Date())
  t.equal(await store.sessionState('s2', new Date()), 'revoked')
  t.same((await store.listLiveSessions(ada.id, new Date())).map(session => session.id), ['s1'])
  t.same((await store.listLiveSessions(bob.id, new Date())).map(session => session.id), ['b1'])

  await store.deleteUser(ada.id)
  t.equal(await store.sessionState('s1', new Date()), 'unknown', 'a deleted user\'s sessions are gone')
  t.equal(await store.findSession('s1'), undefined)
})

import { hash } from '@node-rs/argon2'
import t from 'tap'
import { ARGON2ID_OPTIONS } from '../../core/passwords/passwords.js'
import { assertPasswordAllowed, commonPasswordCount } from '../../core/password-policy.js'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { newUserBody } from '../fixtures/factories.js'

t.test('registering with one of the most common passwords is 400 PASSWORD_TOO_COMMON, whatever its case', async (t) => {
  const server = await build(t, { variant: 'cookie', hashing: 'stored' })
  const count = await commonPasswordCount()
  t.ok(count >= 10_000, `${count} common passwords are refused`)
  for (const password of ['password', 'iloveyou', 'Qwertyuiop', 'PASSWORD1', '1qaz2wsx']) {
    const response = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie', { password }) })
    assertError(t, response, 400, 'PASSWORD_TOO_COMMON')
  }
})

t.test('no composition rules: a long lower-case passphrase, or one of any characters, is accepted', async (t) => {
  const server = await build(t, { variant: 'cookie', hashing: 'stored' })
  for (const password of ['purple umbrella thinks', 'zzkqvbnmwpt', '🦆🦆🦆🦆🦆🦆🦆🦆', 'x'.repeat(256)]) {
    const response = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie', { password }) })
    t.equal(response.statusCode, 201, `${password.slice(0, 20)} accepted`)
  }
  for (const password of ['seven77', 'x'.repeat(257)]) {
    assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody('cookie', { password }) }), 400, 'VALIDATION_FAILED')
  }
})

t.test('the policy function others call for every new password', async (t) => {
  await t.rejects(assertPasswordAllowed('sunshine'), { code: 'PASSWORD_TOO_COMMON', statusCode: 400 })
  await t.rejects(assertPasswordAllowed('short'), { code: 'VALIDATION_FAILED', statusCode: 400 })
  await t.rejects(assertPasswordAllowed('🦆'.repeat(257)), { code: 'VALIDATION_FAILED' }, 'length in characters, not UTF-16 units')
  await t.resolves(assertPasswordAllowed('🦆'.repeat(8)))
})

t.test('a password hashed with older parameters is rehashed at the next login', async (t) => {
  const server = await build(t, { variant: 'cookie', hashing: 'stored' })
  const weakHash = await hash('a fine old password', { ...ARGON2ID_OPTIONS, memoryCost: 4096, timeCost: 1 })
  const user = await server.store.createUser({ firstName: 'Old', lastName: 'Timer', username: 'old_timer', email: 'old@example.com', passwordHash: weakHash })
  t.ok(server.passwords.needsRehash(weakHash))

  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'old@example.com', password: 'a fine old password' } })
  t.equal(login.statusCode, 200)
  const rehashed = (await server.store.findUserById(user.id))?.passwordHash ?? ''
  t.match(rehashed, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, 'now at the current parameters')
  t.notOk(server.passwords.needsRehash(rehashed))
  const again = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'old@example.com', password: 'a fine old password' } })
  t.equal(again.statusCode, 200, 'the new hash verifies')
  t.equal((await server.store.findUserById(user.id))?.passwordHash, rehashed, 'and is not rehashed again')
})

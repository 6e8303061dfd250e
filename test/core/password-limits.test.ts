import t from 'tap'
import { Password, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../core/schemas/common.js'
import { assertPasswordAllowed } from '../../core/password-policy.js'

t.test('the request schema and the policy take their length limits from one place', async (t) => {
  t.equal(Password.minLength, PASSWORD_MIN_LENGTH)
  t.equal(Password.maxLength, PASSWORD_MAX_LENGTH)
  t.equal(Password.description, `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters; never returned`)
  await t.resolves(assertPasswordAllowed('z'.repeat(PASSWORD_MIN_LENGTH)), 'the shortest allowed')
  await t.resolves(assertPasswordAllowed('z'.repeat(PASSWORD_MAX_LENGTH)), 'the longest allowed')
  await t.rejects(assertPasswordAllowed('z'.repeat(PASSWORD_MIN_LENGTH - 1)), { code: 'VALIDATION_FAILED' })
  await t.rejects(assertPasswordAllowed('z'.repeat(PASSWORD_MAX_LENGTH + 1)), { code: 'VALIDATION_FAILED' })
})

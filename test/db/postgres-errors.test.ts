import pg from 'pg'
import t from 'tap'
import { translatePostgresError } from '../../db/postgres/errors.js'
import { DuplicateValueError, StoreUnavailableError } from '../../db/store.js'

function databaseError (code: string, constraint?: string): pg.DatabaseError {
  const error = new pg.DatabaseError(`postgres said ${code}`, 0, 'error')
  error.code = code
  error.constraint = constraint
  return error
}

// Drizzle wraps what the driver throws; the store must look through it.
const wrapped = (cause: Error) => new Error('Failed query: insert into "users" ...', { cause })

t.test('a unique violation names the field that is taken', async (t) => {
  t.same(translatePostgresError(wrapped(databaseError('23505', 'users_email_unique'))), new DuplicateValueError('email'))
  t.same(translatePostgresError(wrapped(databaseError('23505', 'users_username_lower_unique'))), new DuplicateValueError('username'))
  const other = wrapped(databaseError('23505', 'refresh_tokens_pkey'))
  t.equal(translatePostgresError(other), other, 'any other unique index is our fault, not the client\'s')
})

t.test('"not now" from the server or the network is StoreUnavailableError (503)', async (t) => {
  for (const code of ['57P01', '57P03', '53300', '08006', '57014', '40001', '40P01', '25006']) {
    t.type(translatePostgresError(wrapped(databaseError(code))), StoreUnavailableError, code)
  }
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT']) {
    t.type(translatePostgresError(Object.assign(new Error(`connect ${code}`), { code })), StoreUnavailableError, code)
  }
  t.type(translatePostgresError(new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })])), StoreUnavailableError)
  for (const message of ['Connection terminated unexpectedly', 'timeout exceeded when trying to connect', 'Query read timeout']) {
    t.type(translatePostgresError(wrapped(new Error(message))), StoreUnavailableError, message)
  }
})

t.test('anything else stays as it is (500)', async (t) => {
  const syntax = wrapped(databaseError('42601'))
  t.equal(translatePostgresError(syntax), syntax)
  const bug = new TypeError('undefined is not a function')
  t.equal(translatePostgresError(bug), bug)
})

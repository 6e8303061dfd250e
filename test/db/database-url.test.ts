import t from 'tap'
import { describeDatabase, isPostgresUrl } from '../../db/database-url.js'
import { describeStartError } from '../../db/postgres/errors.js'

const URL_WITH_SECRETS = 'postgres://app:s3cret@db.internal:5432/accounts?sslmode=require&password=other'

t.test('a PostgreSQL URL is shown without its user, password and options', async (t) => {
  t.equal(describeDatabase(URL_WITH_SECRETS), 'postgres://db.internal:5432/accounts')
  t.equal(describeDatabase('postgresql://app@db.internal/accounts'), 'postgresql://db.internal/accounts')
  t.equal(describeDatabase('./data/accounts.db'), './data/accounts.db', 'a SQLite path as is')
  t.ok(isPostgresUrl(URL_WITH_SECRETS))
})

t.test('a failed start names the database the same way the start log does', async (t) => {
  const error = describeStartError(new Error('connect ECONNREFUSED'), URL_WITH_SECRETS)
  t.equal(error.message, 'cannot open the PostgreSQL store at postgres://db.internal:5432/accounts: connect ECONNREFUSED')
  t.notMatch(error.message, /s3cret|app@|sslmode|other/)
})

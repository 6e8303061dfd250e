import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openSqliteStore } from '../../db/sqlite/store.js'

// Finding 5 (in part): the SQLite file, -wal and -shm were created rw-r--r--, readable by every local user.
t.test('the SQLite file, -wal and -shm are created 0600 and a folder the service creates 0700', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'modes-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const filename = join(root, 'data', 'accounts.db')
  const store = openSqliteStore(filename)
  t.teardown(() => store.close())
  await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: 'x' })
  const mode = (path: string) => statSync(path).mode & 0o777
  t.equal(mode(join(root, 'data')).toString(8), '700', 'the data folder')
  for (const suffix of ['', '-wal', '-shm']) t.equal(mode(filename + suffix).toString(8), '600', `accounts.db${suffix}`)
})

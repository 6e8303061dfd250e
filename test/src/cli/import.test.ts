import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { openStore } from '../../../db/open.js'
import { runAdmin } from '../../../src/admin.js'
import { bcryptHash, pbkdf2Hash } from '../../fixtures/foreign-hashes.js'
import { temporaryDatabase } from '../../fixtures/temporary.js'

/** `account-service <args>` in this process (as test/src/cli.test.ts runs it), with DATABASE_URL as given and what `-` reads. */
async function cli (databaseUrl: string, args: string[], stdin: string[] = []) {
  const stdout: string[] = []
  const stderr: string[] = []
  const code = await runAdmin(args, {
    out: line => { stdout.push(`${line}\n`) },
    err: line => { stderr.push(`${line}\n`) },
    env: { DATABASE_URL: databaseUrl },
    stdin: (async function * () { yield * stdin.map(chunk => Buffer.from(chunk)) })()
  })
  return { code, stdout: stdout.join(''), stderr: stderr.join('') }
}

function file (t: Test, name: string, content: string): string {
  const folder = mkdtempSync(join(tmpdir(), 'account-import-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  const path = join(folder, name)
  writeFileSync(path, content)
  return path
}

async function storedUser (databaseUrl: string, email: string) {
  const store = await openStore(databaseUrl)
  try {
    return await store.findUserByEmail(email)
  } finally {
    await store.close()
  }
}

const user = (email: string, fields: Record<string, unknown> = {}) => ({ email, first_name: 'Ada', last_name: 'Lovelace', ...fields })

t.test('users import reads NDJSON and prints what it imported and each line it skipped', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const lines = [
    JSON.stringify(user('ada@example.com', { username: 'ada', password_hash: bcryptHash('pw', 4, '2y'), email_verified: true })),
    'not json',
    JSON.stringify(user('bob@example.com', { password_hash: pbkdf2Hash('pw') })),
    JSON.stringify(user('ADA@example.com', { 'bad\u001b[31mfield': 1 }))
  ]
  const path = file(t, 'users.ndjson', lines.join('\n'))
  const first = await cli(databaseUrl, ['users', 'import', path])
  t.equal(first.code, 0, first.stderr)
  t.equal(first.stdout, 'imported 2 users, skipped 2\nline 2: invalid JSON\nline 4: unknown field bad\\x1b[31mfield\n', 'control characters shown escaped')
  t.match(await storedUser(databaseUrl, 'ada@example.com'), { username: 'ada', emailVerified: true, passwordHash: /^\$2y\$04\$/ })
  t.match(await storedUser(databaseUrl, 'bob@example.com'), { passwordHash: /^\$pbkdf2-sha256\$/ })

  const again = await cli(databaseUrl, ['users', 'import', path, '--json'])
  t.equal(again.code, 0)
  t.same(JSON.parse(again.stdout), {
    imported: 0,
    skipped: [
      { line: 1, reason: 'email already registered' },
      { line: 2, reason: 'invalid JSON' },
      { line: 3, reason: 'email already registered' },
      { line: 4, reason: 'unknown field bad\u001b[31mfield' }
    ],
    skipped_count: 4,
    skipped_truncated: false
  })
})

t.test('users import reads a JSON array, and standard input with -', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const array = file(t, 'users.json', '\n  ' + JSON.stringify([user('a@example.com'), user('b@example.com', { email_verified: 'no' })], null, 2))
  t.same(JSON.parse((await cli(databaseUrl, ['users', 'import', array, '--json'])).stdout), { imported: 1, skipped: [{ line: 2, reason: 'email_verified: must be boolean' }], skipped_count: 1, skipped_truncated: false })
  const text = `${JSON.stringify(user('c@example.com'))}\n${JSON.stringify(user('d@example.com'))}\n`
  const cut = text.indexOf('d@exa') + 5
  const fromStdin = await cli(databaseUrl, ['users', 'import', '-'], ['  ', text.slice(0, cut), text.slice(cut)])
  t.equal(fromStdin.stdout, 'imported 2 users, skipped 0\n', fromStdin.stderr)
  t.ok(await storedUser(databaseUrl, 'd@example.com'), 'a line cut across chunks')
})

t.test('users import: a missing file or a broken array fails (exit 1); a missing argument is a usage error (exit 2)', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const missing = await cli(databaseUrl, ['users', 'import', '/nonexistent/users.ndjson'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^error: cannot read the users: ENOENT/)
  const broken = await cli(databaseUrl, ['users', 'import', file(t, 'broken.json', '[{"email": ')])
  t.equal(broken.code, 1)
  t.match(broken.stderr, /^error: the file starts with \[ but is no JSON array/)
  t.equal((await cli(databaseUrl, ['users', 'import'])).code, 2)
})

import { Readable } from 'node:stream'
import t from 'tap'
import { createUserImport, splitLines } from '../../../core/accounts/import.js'
import type { ImportedUser, ImportOutcome, UsersStore } from '../../../db/store.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { bcryptHash, pbkdf2Hash, scryptHash } from '../../fixtures/foreign-hashes.js'

const ndjson = (...values: unknown[]) => values.map(value => typeof value === 'string' ? value : JSON.stringify(value)).join('\n') + '\n'
const ada = (fields: Record<string, unknown> = {}) => ({ email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', ...fields })

t.test('every line is imported or skipped with its line number and why; the import never stops', async (t) => {
  const store = await testStore(t)
  await store.createUser({ firstName: 'Old', lastName: 'User', username: 'taken', email: 'old@example.com', passwordHash: null })
  const userImport = createUserImport({ store, clock: testClock() })
  const body = ndjson(
    ada({ email: '  Ada@Example.COM ', username: ' ada ', password_hash: bcryptHash('pw'), email_verified: true }),
    '{"email": "broken"',
    '',
    [1, 2],
    ada({ email: 'b@example.com', first_name: undefined }),
    ada({ email: 'c@example.com', passwordHash: 'x' }),
    ada({ email: 'not an address' }),
    ada({ email: 'd@example.com', password_hash: '$1$md5$whatever' }),
    ada({ email: 'e@example.com', password_hash: '$2b$15$' + 'a'.repeat(53) }),
    ada({ email: 'ada@example.com' }),
    ada({ email: 'OLD@example.com' }),
    ada({ email: 'f@example.com', username: 'TAKEN' }),
    ada({ email: 'g@example.com', username: 'a b' }),
    ada({ email: 'h@example.com', first_name: 'Bad\u202eName' }),
    ada({ email: 'i@example.com', password_hash: scryptHash('pw', { ln: 10 }) }),
    ada({ email: 'j@example.com', password_hash: pbkdf2Hash('pw'), email_verified: 'yes' }),
    ada({ email: 'k@example.com', password_hash: null })
  )
  const summary = await userImport.importNdjson(Readable.from([Buffer.from(body)]))
  t.same(summary, {
    imported: 3,
    skipped: [
      { line: 2, reason: 'invalid JSON' },
      { line: 4, reason: 'not a JSON object' },
      { line: 5, reason: 'missing first_name' },
      { line: 6, reason: 'unknown field passwordHash' },
      { line: 7, reason: 'email: must match format "email"' },
      { line: 8, reason: 'unknown password_hash format (bcrypt, Argon2, scrypt or PBKDF2 in PHC form)' },
      { line: 9, reason: 'bcrypt cost 15 is above the limit of 13' },
      { line: 10, reason: 'email already registered' },
      { line: 11, reason: 'email already registered' },
      { line: 12, reason: 'username already taken' },
      { line: 13, reason: 'username: holds characters that are not allowed' },
      { line: 14, reason: 'first_name: holds characters that are not allowed' },
      { line: 16, reason: 'email_verified: must be boolean' }
    ],
    skipped_count: 13,
    skipped_truncated: false
  })
  t.match(await store.findUserByEmail('ada@example.com'), { username: 'ada', firstName: 'Ada', emailVerified: true, passwordHash: /^\$2b\$04\$/ }, 'normalized as registration does')
  t.match(await store.findUserByEmail('i@example.com'), { passwordHash: /^\$scrypt\$/, emailVerified: false, username: null })
  t.match(await store.findUserByEmail('k@example.com'), { passwordHash: null }, 'no hash: no password, like a provider-made account')

  t.same(await userImport.importNdjson(Readable.from([Buffer.from(body)])).then(summary => summary.imported), 0, 'run twice, nothing is imported twice')
})

t.test('a JSON array: positions from 1; anything but an array is refused', async (t) => {
  const store = await testStore(t)
  const userImport = createUserImport({ store, clock: testClock() })
  t.same(await userImport.importArray([ada(), 'text', ada({ email: 'b@example.com', username: 'bee' })]), {
    imported: 2, skipped: [{ line: 2, reason: 'not a JSON object' }], skipped_count: 1, skipped_truncated: false
  })
  await t.rejects(userImport.importArray({ users: [] }), { code: 'VALIDATION_FAILED' })
})

t.test('streams: batches are written as lines arrive, never more than one batch held', async (t) => {
  const batches: number[] = []
  let emitted = 0
  const store: Pick<UsersStore, 'importUsers'> = {
    async importUsers (users: ImportedUser[]) {
      // When a batch is written, at most one batch more has been read from the source.
      t.ok(emitted <= (batches.length + 1) * 100 + 100, `batch ${batches.length + 1} written after ${emitted} lines read`)
      batches.push(users.length)
      return users.map((): ImportOutcome => 'imported')
    }
  }
  async function * source () {
    for (let index = 0; index < 1050; index++) {
      emitted++
      yield JSON.stringify(ada({ email: `user${index}@example.com` })) + (index % 2 === 0 ? '\r\n' : '\n')
    }
  }
  const summary = await createUserImport({ store, clock: testClock() }, { batchSize: 100 }).importNdjson(source())
  t.same(summary, { imported: 1050, skipped: [], skipped_count: 0, skipped_truncated: false })
  t.same(batches, [...Array(10).fill(100), 50])
})

t.test('lines: split across chunks, CRLF, a last line without its newline, a byte-order mark, too long lines dropped', async (t) => {
  const read = async (chunks: string[], maxLineBytes = 10) => {
    const lines = []
    for await (const line of splitLines(Readable.from(chunks.map(chunk => Buffer.from(chunk))), { maxLineBytes })) lines.push(line)
    return lines
  }
  t.same(await read(['ab', 'c\r\nd', 'é\n\nlast']), [{ line: 1, text: 'abc' }, { line: 2, text: 'dé' }, { line: 3, text: '' }, { line: 4, text: 'last' }])
  t.same(await read(['0123456789', 'X\nok\n', '01234', '567890123', '\n']), [{ line: 1, tooLong: true }, { line: 2, text: 'ok' }, { line: 3, tooLong: true }])
  t.same(await read(['x'.repeat(30)]), [{ line: 1, tooLong: true }])
  const userImport = createUserImport({ store: await testStore(t), clock: testClock() }, { maxLineBytes: 200 })
  t.same(await userImport.importNdjson(Readable.from([Buffer.from('\uFEFF' + ndjson(ada(), ada({ email: 'b@example.com', last_name: 'x'.repeat(300) })))])), {
    imported: 1, skipped: [{ line: 2, reason: 'line too long' }], skipped_count: 1, skipped_truncated: false
  })
  await t.rejects(userImport.importNdjson(Readable.from([Buffer.from(ndjson(ada({ email: 'c@example.com' })))]), { maxBytes: 10 }), { code: 'PAYLOAD_TOO_LARGE' })
})

import { Readable } from 'node:stream'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { argon2Foreign, bcryptHash, pbkdf2Hash, scryptHash } from '../fixtures/foreign-hashes.js'

// One login per hash family an import brings: the old hash lets the first login in, and is then replaced by
// Argon2id with the service's parameters; a wrong password is refused before and after.

const PASSWORD = 'imported passphrase 7'

t.test('each imported hash family logs in once and is Argon2id from then on; a wrong password is 401', async (t) => {
  const server = await build(t, { variant: 'header' })
  const hashes: Record<string, string> = {
    bcrypt: bcryptHash(PASSWORD, 4, '2y'),
    argon2id: await argon2Foreign(PASSWORD, { algorithm: 2, memoryCost: 4096, timeCost: 3, parallelism: 2 }),
    scrypt: scryptHash(PASSWORD, { ln: 12, r: 8, p: 1 }),
    pbkdf2: pbkdf2Hash(PASSWORD, { digest: 'sha256', iterations: 10_000 })
  }
  const lines = Object.entries(hashes).map(([family, hash]) =>
    JSON.stringify({ email: `${family}@example.com`, first_name: 'Imported', last_name: family, password_hash: hash, email_verified: true }))
  const summary = await server.userImport.importNdjson(Readable.from([Buffer.from(lines.join('\n'))]))
  t.same(summary, { imported: 4, skipped: [], skipped_count: 0, skipped_truncated: false })

  const logIn = (email: string, password: string) => server.inject({ method: 'POST', url: '/auth/login', payload: { email, password } })
  for (const [family, hash] of Object.entries(hashes)) {
    const email = `${family}@example.com`
    const wrong = await logIn(email, `${PASSWORD}x`)
    t.equal(wrong.statusCode, 401, `${family}: a wrong password is refused`)
    t.match(wrong.json(), { code: 'INVALID_CREDENTIALS' })
    t.equal((await server.store.findUserByEmail(email))?.passwordHash, hash, `${family}: a failed login leaves the imported hash`)

    const right = await logIn(email, PASSWORD)
    t.equal(right.statusCode, 200, `${family}: the imported hash lets the right password in`)
    const stored = (await server.store.findUserByEmail(email))?.passwordHash ?? ''
    t.match(stored, /^\$argon2id\$v=19\$/, `${family}: replaced by Argon2id`)
    t.equal(server.passwords.needsRehash(stored), false, `${family}: with the service's current parameters`)

    t.equal((await logIn(email, PASSWORD)).statusCode, 200, `${family}: and the new hash lets it in again`)
    t.equal((await logIn(email, `${PASSWORD}x`)).statusCode, 401, `${family}: still no wrong password`)
  }
})

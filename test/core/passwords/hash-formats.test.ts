import t from 'tap'
import { IMPORT_HASH_LIMITS, importRefusal, parseHash } from '../../../core/passwords/hash-formats.js'
import { argon2Foreign, bcryptHash, pbkdf2Hash, scryptHash } from '../../fixtures/foreign-hashes.js'

t.test('each family parses to its parameters', async (t) => {
  t.match(parseHash(bcryptHash('pw', 5, '2y')), { family: 'bcrypt', cost: 5 })
  t.match(parseHash(await argon2Foreign('pw', { algorithm: 1, memoryCost: 4096, timeCost: 3, parallelism: 2 })), { family: 'argon2', variant: 'argon2i', memoryCost: 4096, timeCost: 3, parallelism: 2 })
  t.match(parseHash(scryptHash('pw', { ln: 10, r: 8, p: 2 })), { family: 'scrypt', N: 1024, r: 8, p: 2 })
  const pbkdf2 = parseHash(pbkdf2Hash('pw', { digest: 'sha512', iterations: 1234 }))
  t.match(pbkdf2, { family: 'pbkdf2', digest: 'sha512', iterations: 1234 })
  t.equal((pbkdf2 as { hash: Buffer }).hash.length, 64)
  t.match(parseHash(pbkdf2Hash('pw', { digest: 'sha1', iterations: 99, passlib: true })), { family: 'pbkdf2', digest: 'sha1', iterations: 99 }, "passlib's bare rounds and '.' base64")
})

t.test('anything else is no hash, with a reason', async (t) => {
  const scrypt = scryptHash('pw', { ln: 10 })
  const pbkdf2 = pbkdf2Hash('pw')
  const argon2 = await argon2Foreign('pw')
  for (const text of [
    '', 'plain text', '$2x$10$' + 'a'.repeat(53), '$2b$10$' + 'a'.repeat(52), '$2b$03$' + 'a'.repeat(53), '$2b$1$' + 'a'.repeat(53),
    '$1$md5crypt$abc', '$argon2id$v=19$m=19456,t=2$c2FsdHNhbHQ$aGFzaGhhc2g', argon2.replace('m=8192', 'm=08192'),
    argon2.replace(/\$[^$]+$/, '$!!!!'), scrypt.replace('ln=10', 'ln=0'), scrypt.replace('ln=10', 'ln=10,x=1'),
    scrypt.replace(/\$[^$]+$/, '$c2hvcnQ'), scrypt + '$', pbkdf2.replace('pbkdf2-sha256', 'pbkdf2-md5'),
    pbkdf2.replace('i=1000', 'i=0'), pbkdf2.replace('l=32', 'l=31'), pbkdf2.replace(/\$[^$]+$/, '$a'),
    pbkdf2.replace(/\$[^$]+\$([^$]+)$/, '$%%%%$$1'), '$scrypt$ln=10,r=8,p=1$$', 'x'.repeat(2000)
  ]) {
    const parsed = parseHash(text)
    t.ok('invalid' in parsed, `${text.slice(0, 60)}: ${JSON.stringify(parsed)}`)
    t.type(importRefusal(text), 'string')
  }
})

t.test('an import refuses parameters beyond the limits, and takes those at them', async (t) => {
  t.equal(importRefusal(bcryptHash('pw', 4)), undefined)
  t.match(importRefusal('$2b$14$' + 'a'.repeat(53)), /bcrypt cost 14 is above the limit of 13/)
  t.equal(importRefusal('$2b$13$' + 'a'.repeat(53)), undefined, 'cost 13 is taken (never computed here)')
  t.equal(importRefusal(scryptHash('pw', { ln: 10 })), undefined)
  // Built by string, not computed: ln=17 would take 128 MiB and a second to make.
  const salt = 'c2FsdHNhbHRzYWx0c2FsdA'
  const key = 'a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U'
  t.equal(importRefusal(`$scrypt$ln=16,r=8,p=1$${salt}$${key}`), undefined, "passlib's default")
  t.match(importRefusal(`$scrypt$ln=17,r=8,p=1$${salt}$${key}`), /scrypt parameters ln=17,r=8,p=1 are above the limit/)
  t.match(importRefusal(`$scrypt$ln=16,r=8,p=2$${salt}$${key}`), /above the limit/, 'work N·r·p')
  t.match(importRefusal(`$scrypt$ln=31,r=1024,p=1$${salt}$${key}`), /above the limit/, 'gigabytes')
  t.equal(importRefusal(`$pbkdf2-sha256$i=${IMPORT_HASH_LIMITS.pbkdf2Work.sha256},l=32$${salt}$${key}`), undefined)
  t.match(importRefusal(`$pbkdf2-sha256$i=${IMPORT_HASH_LIMITS.pbkdf2Work.sha256 + 1},l=32$${salt}$${key}`), /PBKDF2-SHA256 with 3000001 iterations is above the limit/)
  t.match(importRefusal(`$pbkdf2-sha1$i=1500000$${salt}$${key}`), /above the limit/, 'a 32-byte key of SHA-1 takes two runs')
  t.match(importRefusal(`$argon2id$v=19$m=524288,t=1,p=1$${salt}$${key}`), /Argon2 parameters m=524288,t=1,p=1 are above the limit/)
  t.match(importRefusal(`$argon2id$v=19$m=65536,t=17,p=1$${salt}$${key}`), /above the limit/)
  t.equal(importRefusal(`$argon2id$v=19$m=65536,t=16,p=4$${salt}$${key}`), undefined)
})

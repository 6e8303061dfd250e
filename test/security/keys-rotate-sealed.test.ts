import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { openStore } from '../../db/open.js'
import { runAdmin } from '../../src/admin.js'
import { isSealed } from '../../core/secrets/sealing.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'

// Finding 11 (issue 21): `keys rotate` without SIGNING_KEY_ENCRYPTION_KEY wrote a private key in clear into a store whose keys are sealed.
const newEncryptionKey = () => randomBytes(32).toString('base64')

/** A store whose signing key the service sealed at its first start. */
async function sealedStore (t: Test): Promise<string> {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, SIGNING_KEY_ENCRYPTION_KEY: newEncryptionKey() } })
  const keys = await server.store.listSigningKeys()
  t.ok(keys.length === 1 && isSealed(keys[0].privateKeyPem ?? ''), 'the service sealed its key')
  await server.close()
  return databaseUrl
}

/** `account-service keys rotate` in this process, with SIGNING_KEY_ENCRYPTION_KEY as given (or unset). */
async function rotate (t: Test, databaseUrl: string, encryptionKey: string | undefined) {
  const printed: string[] = []
  const errors: string[] = []
  const env = encryptionKey === undefined ? {} : { SIGNING_KEY_ENCRYPTION_KEY: encryptionKey }
  const code = await runAdmin(['keys', 'rotate', '--database', databaseUrl], { out: line => { printed.push(line) }, err: line => { errors.push(line) }, env })
  return { code, stdout: printed.join('\n'), stderr: errors.join('\n') }
}

async function storedKeys (databaseUrl: string) {
  const store = await openStore(databaseUrl)
  try {
    return await store.listSigningKeys()
  } finally {
    await store.close()
  }
}

t.test('keys rotate without SIGNING_KEY_ENCRYPTION_KEY on a sealed store is refused with one line, exit 1, and stores nothing', async (t) => {
  const databaseUrl = await sealedStore(t)
  const before = await storedKeys(databaseUrl)
  const result = await rotate(t, databaseUrl, undefined)
  t.equal(result.code, 1, 'exit code 1')
  t.equal(result.stdout, '', 'nothing printed as done')
  t.match(result.stderr, /^error: [^\n]*SIGNING_KEY_ENCRYPTION_KEY[^\n]*$/, 'one line naming the setting')
  const after = await storedKeys(databaseUrl)
  t.same(after, before, 'no key added, the sealed one kept')
  t.notOk(after.some(key => key.privateKeyPem?.includes('PRIVATE KEY')), 'no private key in clear')
})

t.test('keys rotate with another SIGNING_KEY_ENCRYPTION_KEY than the one that sealed the store is refused too', async (t) => {
  const databaseUrl = await sealedStore(t)
  const before = await storedKeys(databaseUrl)
  const result = await rotate(t, databaseUrl, newEncryptionKey())
  t.equal(result.code, 1)
  t.match(result.stderr, /^error: [^\n]*SIGNING_KEY_ENCRYPTION_KEY[^\n]*$/)
  t.same(await storedKeys(databaseUrl), before, 'nothing written')
})

t.test('keys rotate on a store whose keys are in clear still works without SIGNING_KEY_ENCRYPTION_KEY', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl } })
  await server.close()
  const result = await rotate(t, databaseUrl, undefined)
  t.equal(result.code, 0, result.stderr)
  t.match(result.stdout, /^added signing key /)
  t.same((await storedKeys(databaseUrl)).map(key => key.algorithm), ['EdDSA', 'EdDSA', 'RS256'], 'a new key of each kind')
})

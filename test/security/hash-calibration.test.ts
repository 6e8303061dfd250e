import { hash } from '@node-rs/argon2'
import t from 'tap'
import { openStore } from '../../db/open.js'
import { ARGON2ID_OPTIONS } from '../../core/passwords/passwords.js'
import { runAdmin } from '../../src/admin.js'
import { HASH_PARAMETERS_SETTING, OWASP_MINIMUM } from '../../core/passwords/parameters.js'
import { build } from '../fixtures/build.js'
import { registerUser } from '../fixtures/factories.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

interface Parameters { memoryCost: number, timeCost: number, parallelism: number }

async function storedParameters (databaseUrl: string): Promise<Parameters | undefined> {
  const store = await openStore(databaseUrl)
  try {
    const value = await store.readSetting(HASH_PARAMETERS_SETTING)
    return value === undefined ? undefined : JSON.parse(value) as Parameters
  } finally {
    await store.close()
  }
}

async function storeParameters (databaseUrl: string, parameters: Parameters): Promise<void> {
  const store = await openStore(databaseUrl)
  try {
    await store.writeSetting(HASH_PARAMETERS_SETTING, JSON.stringify(parameters))
  } finally {
    await store.close()
  }
}

const prefix = ({ memoryCost, timeCost, parallelism }: Parameters) => `$argon2id$v=19$m=${memoryCost},t=${timeCost},p=${parallelism}$`

t.test('the first start measures Argon2id and stores parameters of at least OWASP\'s minimum; a second instance uses them', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const first = await build(t, { variant: 'header', hashing: 'stored', env: { DATABASE_URL: databaseUrl, PASSWORD_HASH_TARGET: '50ms' } })
  const stored = await storedParameters(databaseUrl)
  if (stored === undefined) throw new Error('no parameters stored at the first start')
  t.ok(stored.memoryCost >= OWASP_MINIMUM.memoryCost, `memory ${stored.memoryCost} KiB`)
  t.ok(stored.timeCost >= OWASP_MINIMUM.timeCost, `${stored.timeCost} passes`)
  t.ok(stored.parallelism >= 1)
  const user = await registerUser(first, 'header')
  t.ok((await first.store.findUserByEmail(user.email))?.passwordHash?.startsWith(prefix(stored)), 'new passwords are hashed with them')
  await first.close()

  // A target twenty times higher would measure to many more passes: the stored ones win.
  const second = await build(t, { variant: 'header', hashing: 'stored', env: { DATABASE_URL: databaseUrl, PASSWORD_HASH_TARGET: '1s' } })
  t.same(await storedParameters(databaseUrl), stored, 'nothing measured or stored again')
  const other = await registerUser(second, 'header')
  t.ok((await second.store.findUserByEmail(other.email))?.passwordHash?.startsWith(prefix(stored)), 'the second instance hashes with the stored parameters')
})

t.test('`account-service hash calibrate` measures again and stores new parameters', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  await storeParameters(databaseUrl, OWASP_MINIMUM)
  const lines: string[] = []
  t.equal(await runAdmin(['hash', 'calibrate', '--database', databaseUrl, '--json'], { out: line => lines.push(line), env: { PASSWORD_HASH_TARGET: '1s' } }), 0)
  const stored = await storedParameters(databaseUrl)
  t.ok(stored !== undefined && stored.timeCost > OWASP_MINIMUM.timeCost, `a 1 s target takes more than the minimum's passes (${stored?.timeCost})`)
  t.equal(stored?.memoryCost, OWASP_MINIMUM.memoryCost)
  const printed = JSON.parse(lines.join('\n')) as Parameters & { previous: Parameters }
  t.equal(printed.timeCost, stored?.timeCost, 'it prints what it stored')
  t.same(printed.previous, OWASP_MINIMUM, 'and what was there before')
})

t.test('a login with a hash of other parameters than the stored ones rehashes it with the stored ones', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const raised = { ...OWASP_MINIMUM, timeCost: 3 }
  await storeParameters(databaseUrl, raised)
  const server = await build(t, { variant: 'cookie', hashing: 'stored', env: { DATABASE_URL: databaseUrl } })
  // A hash at OWASP's minimum, as every password was hashed before calibration existed.
  const oldHash = await hash('a fine old password', ARGON2ID_OPTIONS)
  const user = await server.store.createUser({ firstName: 'Old', lastName: 'Timer', username: 'old_timer', email: 'old@example.com', passwordHash: oldHash })
  t.ok(server.passwords.needsRehash(oldHash))

  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'old@example.com', password: 'a fine old password' } })
  t.equal(login.statusCode, 200)
  const rehashed = (await server.store.findUserById(user.id))?.passwordHash ?? ''
  t.ok(rehashed.startsWith(prefix(raised)), `rehashed with the stored parameters: ${rehashed.slice(0, 32)}`)
  const again = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: 'old@example.com', password: 'a fine old password' } })
  t.equal(again.statusCode, 200, 'the new hash verifies')
})

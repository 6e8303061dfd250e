import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { openStore } from '../../db/open.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { SERVER_ENTRY, startServer } from '../fixtures/process.js'

// Finding 5, at the start of the real server: a sealed key needs the SIGNING_KEY_ENCRYPTION_KEY that sealed it.
const variant = 'header'
const newEncryptionKey = () => randomBytes(32).toString('base64')

/** One start of the real server, to its exit: its exit code and every output line. */
function startToExit (environment: Record<string, string>) {
  const env = { PATH: process.env.PATH, NODE_ENV: 'production', PORT: '0', LOG_LEVEL: 'info', ...environment }
  const result = spawnSync(process.execPath, [SERVER_ENTRY], { env, encoding: 'utf8', timeout: 60_000 })
  return { status: result.status, lines: `${result.stdout}${result.stderr}`.split('\n').filter(line => line !== '') }
}

t.test('the real server refuses to start with another SIGNING_KEY_ENCRYPTION_KEY, or without one: exit 1, one line naming it', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const first = await build(t, { variant, env: { DATABASE_URL: databaseUrl, SIGNING_KEY_ENCRYPTION_KEY: newEncryptionKey() } })
  const stored = await first.store.listSigningKeys()
  await first.close()

  for (const [name, setting] of [['another key', { SIGNING_KEY_ENCRYPTION_KEY: newEncryptionKey() }], ['no key', {}]] as const) {
    const { status, lines } = startToExit({ DATABASE_URL: databaseUrl, ...setting })
    t.equal(status, 1, `${name}: exit code 1`)
    const naming = lines.filter(line => line.includes('SIGNING_KEY_ENCRYPTION_KEY'))
    t.equal(naming.length, 1, `${name}: one line names the setting`)
    t.match(naming[0], /"level":60,.*"msg":"start failed: SIGNING_KEY_ENCRYPTION_KEY (does not open|is not set)/, `${name}: the start failed on it`)
    t.notMatch(lines.join('\n'), /Server listening/, `${name}: it never listened`)
  }
  // The refused starts wrote nothing: the sealed key is as it was.
  const store = await openStore(databaseUrl)
  t.teardown(() => store.close())
  t.same(await store.listSigningKeys(), stored)
})

t.test('in production without SIGNING_KEY_ENCRYPTION_KEY the real server logs one warning at start', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const server = await startServer(t, { DATABASE_URL: databaseUrl })
  const warnings = server.output().split('\n').filter(line => line.includes('SIGNING_KEY_ENCRYPTION_KEY'))
  t.equal(warnings.length, 1)
  t.match(warnings[0], /"level":40,.*stored in clear/)

  const sealed = await startServer(t, { DATABASE_URL: await testDatabaseUrl(t, { persistent: true }), SIGNING_KEY_ENCRYPTION_KEY: newEncryptionKey() })
  t.notMatch(sealed.output(), /SIGNING_KEY_ENCRYPTION_KEY/, 'with it set, no warning')
})

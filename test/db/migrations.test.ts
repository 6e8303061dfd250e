import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { drizzle as sqliteDrizzle } from 'drizzle-orm/better-sqlite3'
import { migrate as sqliteMigrate } from 'drizzle-orm/better-sqlite3/migrator'
import { drizzle as postgresDrizzle } from 'drizzle-orm/node-postgres'
import { migrate as postgresMigrate } from 'drizzle-orm/node-postgres/migrator'
import pg from 'pg'
import t, { type Test } from 'tap'
import { openStore } from '../../db/open.js'
import { onPostgres, postgresSchema, testDatabaseUrl } from '../fixtures/database.js'

/** The backend's migrations up to and including `tag`, copied to a folder of their own. */
function migrationsUpTo (t: Test, tag: string): string {
  const source = fileURLToPath(new URL(`../../db/${onPostgres ? 'postgres' : 'sqlite'}/migrations`, import.meta.url))
  const folder = mkdtempSync(join(tmpdir(), 'account-migrations-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  cpSync(source, folder, { recursive: true })
  const journalPath = join(folder, 'meta', '_journal.json')
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: Array<{ tag: string }> }
  const last = journal.entries.findIndex(entry => entry.tag === tag)
  if (last === -1) throw new Error(`no migration ${tag}`)
  journal.entries = journal.entries.slice(0, last + 1)
  writeFileSync(journalPath, JSON.stringify(journal))
  return folder
}

/** A database at migration 0000 with one user holding two sessions (refresh-token families) made before 0001 existed. */
async function databaseBeforeSessions (t: Test, times: Date[]): Promise<string> {
  const migrationsFolder = migrationsUpTo(t, '0000_init')
  const tokens = [['h1', 'family-1', times[0]], ['h2', 'family-1', times[1]], ['h3', 'family-2', times[2]]] as const
  const expiresAt = new Date(Date.now() + 60_000)
  if (!onPostgres) {
    const filename = await testDatabaseUrl(t, { persistent: true })
    mkdirSync(dirname(filename), { recursive: true })
    const connection = new Database(filename)
    sqliteMigrate(sqliteDrizzle({ client: connection }), { migrationsFolder })
    const { lastInsertRowid } = connection.prepare('insert into users (first_name, last_name, email, password_hash, created_at, updated_at) values (?, ?, ?, ?, ?, ?)')
      .run('Ada', 'Lovelace', 'a@example.com', 'hash', times[0].getTime(), times[0].getTime())
    const insert = connection.prepare('insert into refresh_tokens (token_hash, user_id, family_id, created_at, expires_at) values (?, ?, ?, ?, ?)')
    for (const [hash, family, createdAt] of tokens) insert.run(hash, lastInsertRowid, family, createdAt.getTime(), expiresAt.getTime())
    connection.close()
    return filename
  }
  const { schema, databaseUrl } = await postgresSchema(t)
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await postgresMigrate(postgresDrizzle({ client }), { migrationsFolder, migrationsSchema: schema })
    const { rows } = await client.query('insert into users (first_name, last_name, email, password_hash, created_at, updated_at) values ($1, $2, $3, $4, $5, $5) returning id',
      ['Ada', 'Lovelace', 'a@example.com', 'hash', times[0]])
    for (const [hash, family, createdAt] of tokens) {
      await client.query('insert into refresh_tokens (token_hash, user_id, family_id, created_at, expires_at) values ($1, $2, $3, $4, $5)', [hash, rows[0].id, family, createdAt, expiresAt])
    }
  } finally {
    await client.end()
  }
  return databaseUrl
}

t.test('0001_account_lifecycle gives every existing refresh-token family a session row, so old sessions are listed', async (t) => {
  const start = Date.now() - 10_000
  const times = [new Date(start), new Date(start + 2000), new Date(start + 4000)]
  const store = await openStore(await databaseBeforeSessions(t, times))
  t.teardown(() => store.close())
  const ada = await store.findUserByEmail('a@example.com')
  t.match(ada, { emailVerified: false, emailVerifiedAt: null }, 'existing users are unverified')
  t.same(await store.findSession('family-1'), { id: 'family-1', userId: ada?.id, createdAt: times[0], lastUsedAt: times[1], userAgent: null, ip: null, authenticatedAt: times[0], amr: '', activeOrgId: null },
    'from its first token to its last; its last password proof was its login (0002); how it was signed in is unknown (0015); no active organisation (0018)')
  t.same((await store.listLiveSessions(ada?.id ?? 0, new Date())).map(session => session.id), ['family-2', 'family-1'])
  t.equal(await store.sessionState('family-1', new Date()), 'live')
})

t.test('0005 (nullable password, identities) keeps every user\'s sessions, tokens and events: the rebuilt users table cascades nothing', async (t) => {
  const migrationsFolder = migrationsUpTo(t, '0004_settings')
  const now = Date.now()
  const expiresAt = now + 60_000
  let databaseUrl: string
  if (!onPostgres) {
    databaseUrl = await testDatabaseUrl(t, { persistent: true })
    mkdirSync(dirname(databaseUrl), { recursive: true })
    const connection = new Database(databaseUrl)
    connection.pragma('foreign_keys = ON')
    sqliteMigrate(sqliteDrizzle({ client: connection }), { migrationsFolder })
    const { lastInsertRowid: userId } = connection.prepare('insert into users (first_name, last_name, email, password_hash, created_at, updated_at) values (?, ?, ?, ?, ?, ?)')
      .run('Ada', 'Lovelace', 'a@example.com', 'hash', now, now)
    connection.prepare('insert into sessions (id, user_id, created_at, last_used_at, authenticated_at) values (?, ?, ?, ?, ?)').run('family-1', userId, now, now, now)
    connection.prepare('insert into refresh_tokens (token_hash, user_id, family_id, created_at, expires_at) values (?, ?, ?, ?, ?)').run('h1', userId, 'family-1', now, expiresAt)
    connection.prepare('insert into security_events (type, user_id, created_at) values (?, ?, ?)').run('login', userId, now)
    connection.close()
  } else {
    const { schema, databaseUrl: url } = await postgresSchema(t)
    databaseUrl = url
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      await postgresMigrate(postgresDrizzle({ client }), { migrationsFolder, migrationsSchema: schema })
      const { rows } = await client.query('insert into users (first_name, last_name, email, password_hash, created_at, updated_at) values ($1, $2, $3, $4, $5, $5) returning id',
        ['Ada', 'Lovelace', 'a@example.com', 'hash', new Date(now)])
      await client.query('insert into sessions (id, user_id, created_at, last_used_at, authenticated_at) values ($1, $2, $3, $3, $3)', ['family-1', rows[0].id, new Date(now)])
      await client.query('insert into refresh_tokens (token_hash, user_id, family_id, created_at, expires_at) values ($1, $2, $3, $4, $5)', ['h1', rows[0].id, 'family-1', new Date(now), new Date(expiresAt)])
      await client.query('insert into security_events (type, user_id, created_at) values ($1, $2, $3)', ['login', rows[0].id, new Date(now)])
    } finally {
      await client.end()
    }
  }
  const store = await openStore(databaseUrl)
  t.teardown(() => store.close())
  const ada = await store.findUserByEmail('a@example.com')
  t.equal(ada?.passwordHash, 'hash')
  t.equal(await store.sessionState('family-1', new Date()), 'live', 'the session and its refresh token are still there')
  t.equal((await store.listSecurityEvents(ada?.id ?? 0, { limit: 10 })).length, 1, 'the events too')
  t.ok(await store.setPasswordHash(ada?.id ?? 0, null, new Date()), 'a password can now be absent')
  t.same(await store.listIdentities(ada?.id ?? 0), [])
})

// The SQLite store: one connection (connection.ts) and the queries of each aggregate, one file each.
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import { composeStore } from '../compose-store.js'
import type { AccountStore } from '../store.js'
import { MIGRATIONS_FOLDER, connect, SqliteConnection } from './connection.js'
import { usersQueries } from './users.js'
import { accountsQueries } from './accounts.js'
import { sessionsQueries } from './sessions.js'
import { oneTimeTokensQueries } from './one-time-tokens.js'
import { eventsQueries } from './events.js'
import { outboxQueries } from './outbox.js'
import { webhooksQueries } from './webhooks.js'
import { keysQueries } from './keys.js'
import { passkeysQueries } from './passkeys.js'
import { secondFactorsQueries } from './second-factors.js'
import { identitiesQueries } from './identities.js'
import { settingsQueries } from './settings.js'
import { oauthQueries } from './oauth.js'
import { emailCodesQueries } from './email-codes.js'
import { organisationsQueries } from './organisations.js'

/**
 * Opens (creating if needed) the SQLite file at `filename`, or `:memory:`,
 * and applies the migrations.
 */
export function openSqliteStore (filename: string): AccountStore {
  // A folder the service creates is its own (0700): the file holds password hashes and signing keys.
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true, mode: 0o700 })
  const connection = connect(filename)
  // A migration that rebuilds a table (SQLite cannot drop a NOT NULL in place: 0005 rebuilds users) drops the
  // old table, and with foreign keys on that DROP deletes every row referencing it (ON DELETE CASCADE: sessions,
  // tokens, events). The migrator runs in one transaction, where the generated "PRAGMA foreign_keys=OFF" is a
  // no-op, so keys are off around it here and checked after.
  connection.pragma('foreign_keys = OFF')
  try {
    migrate(drizzle({ client: connection }), { migrationsFolder: MIGRATIONS_FOLDER })
  } finally {
    connection.pragma('foreign_keys = ON')
  }
  const violations = connection.pragma('foreign_key_check') as unknown[]
  if (violations.length > 0) throw new Error(`migrations left ${violations.length} rows with a broken foreign key`)
  const c = new SqliteConnection(connection, filename === ':memory:' ? undefined : () => connect(filename))
  return composeStore(c, [usersQueries, accountsQueries, sessionsQueries, oneTimeTokensQueries, eventsQueries, outboxQueries, keysQueries, passkeysQueries, secondFactorsQueries, identitiesQueries, settingsQueries, oauthQueries, webhooksQueries, emailCodesQueries, organisationsQueries])
}

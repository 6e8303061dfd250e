// The PostgreSQL store: one pool (connection.ts) and the queries of each aggregate, one file each.
import { drizzle } from 'drizzle-orm/node-postgres'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import pg from 'pg'
import { composeStore } from '../compose-store.js'
import type { AccountStore } from '../store.js'
import { describeStartError } from './errors.js'
import { prepareStatements } from './queries.js'
import { MIGRATIONS_FOLDER, PostgresConnection } from './connection.js'
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

/** Connections per instance: N instances need N × POOL_SIZE of the server's max_connections. */
export const POOL_SIZE = 10
/** How long a request waits for a connection (pool full or server unreachable) before answering 503. */
export const CONNECT_TIMEOUT_MS = 2000
/** The server cancels a statement after this (a lock held too long); the request answers 503. */
export const STATEMENT_TIMEOUT_MS = 5000
/** The client gives up on an answer after this (the server or the network vanished without closing). */
export const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 1000

/**
 * Opens a pool on the PostgreSQL database named by `databaseUrl` and applies
 * the migrations. The tables live in the connection's current schema (set
 * `?options=-c search_path=name` in the URL to choose one). Several instances
 * may start at once: migrations run under an advisory lock.
 * Throws one clear line when the database cannot be reached at start.
 */
export async function openPostgresStore (databaseUrl: string): Promise<AccountStore> {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: POOL_SIZE,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    keepAlive: true
  })
  // An idle connection whose server went away: pg drops it from the pool by itself, and the next
  // query opens a new one or answers 503. Without a listener the 'error' event would end the process.
  pool.on('error', () => {})
  // A connection lost while checked out between two statements of a transaction (pg-pool listens
  // only while a client is idle) would emit 'error' with no listener, which ends the process too.
  // The transaction's next statement fails and reports it as 503.
  pool.on('connect', (client) => { client.on('error', () => {}) })
  try {
    await migrateUnderLock(databaseUrl)
  } catch (error) {
    await pool.end()
    throw describeStartError(error, databaseUrl)
  }
  const db = drizzle({ client: pool })
  const c = new PostgresConnection(pool, db, prepareStatements(db))
  return composeStore(c, [usersQueries, accountsQueries, sessionsQueries, oneTimeTokensQueries, eventsQueries, outboxQueries, keysQueries, passkeysQueries, secondFactorsQueries, identitiesQueries, settingsQueries, oauthQueries, webhooksQueries, emailCodesQueries, organisationsQueries])
}

// On a connection of its own, without the pool's timeouts: a later migration may build an index
// for longer than a request may wait. Closing it also releases the lock, whatever happened.
export async function migrateUnderLock (databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
  client.on('error', () => {}) // reported by the query that fails
  try {
    await client.connect()
    const { rows } = await client.query<{ schema: string | null }>('select current_schema() as schema')
    const schema = rows[0].schema
    if (schema === null) throw new Error('the search_path of DATABASE_URL names no existing schema')
    // Session lock, not a transaction's: drizzle's migrator runs its own transaction on this connection.
    await client.query('select pg_advisory_lock(hashtext($1))', [`account-service migrations ${schema}`])
    await migrate(drizzle({ client }), { migrationsFolder: MIGRATIONS_FOLDER, migrationsSchema: schema })
  } finally {
    await client.end()
  }
}

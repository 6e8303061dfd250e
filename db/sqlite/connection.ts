import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { StoreUnavailableError } from '../store.js'
import { type Db, prepareStatements, type PendingRotation, translateSqliteError, findSqliteError } from './queries.js'

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url))

/** How long a write waits for another process's lock (an admin command, a backup) before answering 503. */
export const BUSY_TIMEOUT_MS = 2000

/**
 * A checkpoint copies the WAL into the database file and syncs both: two
 * fsyncs, whatever the number of pages. SQLite's default runs one inside the
 * commit that crosses 1000 WAL pages (every ~200 refresh rotations), which
 * made checkpoints 60% of a rotation's cost. We checkpoint once a second off
 * the request path instead, keeping a far larger page limit as a backstop.
 */
export const CHECKPOINT_INTERVAL_MS = 1000

export const WAL_AUTOCHECKPOINT_PAGES = 10_000

/**
 * One connection with our pragmas. WAL lets readers run beside the one writer.
 * synchronous=NORMAL (chosen over FULL, see docs/deploy.md, Storage): in
 * WAL mode a committed transaction survives a crash of the process, and only an
 * OS crash or power loss can lose the last ones; FULL would sync on every commit,
 * blocking the whole process for milliseconds each time.
 */
export function connect (filename: string): Database.Database {
  // Created 0600: SQLite gives the -wal and -shm files the database file's mode. better-sqlite3 opens
  // synchronously, so the process-wide umask is back before any other code runs.
  const umask = process.umask(0o077)
  let connection: Database.Database
  try {
    connection = new Database(filename)
    connection.pragma('journal_mode = WAL')
  } finally {
    process.umask(umask)
  }
  connection.pragma('synchronous = NORMAL')
  connection.pragma('foreign_keys = ON')
  // better-sqlite3 waits for a lock synchronously, holding up every request; give up after BUSY_TIMEOUT_MS with 503.
  connection.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  connection.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
  return connection
}

/** One open SQLite file: the queries of every aggregate (db/sqlite/<aggregate>.ts) run through it. */
export class SqliteConnection {
  db: Db

  statements: ReturnType<typeof prepareStatements>

  /** Set when a write found the file read-only: the next query first reopens it (see run). */
  readOnly = false

  readonly checkpoints: NodeJS.Timeout

  pendingRotations: PendingRotation[] = []

  // The journal time of the newest migration this build ships, for ping.
  readonly newestMigration = Math.max(...readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).map(migration => migration.folderMillis))

  connection: Database.Database
  readonly reconnect: (() => Database.Database) | undefined

  constructor (connection: Database.Database, reconnect?: () => Database.Database) {
    this.connection = connection
    this.reconnect = reconnect
    this.db = drizzle({ client: connection })
    this.statements = prepareStatements(this.db)
    this.checkpoints = setInterval(() => {
      // PASSIVE never waits for readers or writers; a busy or failed checkpoint is retried at the next tick.
      try { this.connection.pragma('wal_checkpoint(PASSIVE)') } catch {}
    }, CHECKPOINT_INTERVAL_MS).unref()
  }

  async ping () {
    try {
      // drizzle-orm's migrator records each applied migration's journal time; the newest must be there.
      const applied = this.connection.prepare('SELECT max(created_at) AS newest FROM __drizzle_migrations').get() as { newest: number | null }
      if (applied.newest === null || applied.newest < this.newestMigration) throw new Error('migrations not applied')
    } catch (error) {
      throw new StoreUnavailableError({ cause: error })
    }
  }

  async close () {
    clearInterval(this.checkpoints)
    if (this.connection.open) this.connection.close()
  }

  /** Runs a synchronous query, translating SQLite's errors into the store's. */
  run<T> (query: () => T): T {
    if (this.readOnly) this.reopen()
    try {
      return query()
    } catch (error) {
      if (findSqliteError(error)?.code.startsWith('SQLITE_READONLY') === true) this.readOnly = true
      throw translateSqliteError(error)
    }
  }

  /**
   * SQLite opens a file it may not write read-only, and the connection stays so
   * after the file becomes writable again (permissions fixed, file replaced);
   * only a new connection sees the change. Until one succeeds, the old one keeps
   * serving reads.
   */
  reopen () {
    if (this.reconnect === undefined) return
    let connection: Database.Database
    try {
      connection = this.reconnect()
    } catch {
      return
    }
    this.connection.close()
    this.connection = connection
    this.db = drizzle({ client: connection })
    this.statements = prepareStatements(this.db)
    this.readOnly = false
  }
}

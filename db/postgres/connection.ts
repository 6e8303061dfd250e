import { fileURLToPath } from 'node:url'
import { drizzle } from 'drizzle-orm/node-postgres'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import pg from 'pg'
import { StoreUnavailableError } from '../store.js'
import { translatePostgresError } from './errors.js'
import { type Db, type Transaction, prepareStatements } from './queries.js'

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url))

/** One open PostgreSQL pool: the queries of every aggregate (db/postgres/<aggregate>.ts) run through it. */
export class PostgresConnection {
  closed = false

  // The journal time of the newest migration this build ships, for ping.
  readonly newestMigration = Math.max(...readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).map(migration => migration.folderMillis))

  readonly pool: pg.Pool
  readonly db: Db
  readonly statements: ReturnType<typeof prepareStatements>

  constructor (pool: pg.Pool, db: Db, statements: ReturnType<typeof prepareStatements>) {
    this.pool = pool
    this.db = db
    this.statements = statements
  }

  async ping () {
    try {
      // The migrator keeps its journal beside the tables (the schema of DATABASE_URL's search_path).
      const { rows } = await this.pool.query<{ newest: string | null }>('select max(created_at) as newest from __drizzle_migrations')
      if (rows[0].newest === null || Number(rows[0].newest) < this.newestMigration) throw new Error('migrations not applied')
    } catch (error) {
      // Whatever the cause (closed pool, lost server, missing journal), the store is not ready.
      throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError({ cause: error })
    }
  }

  async close () {
    if (this.closed) return
    this.closed = true
    await this.pool.end()
  }

  /**
   * A transaction on a connection of its own. Not drizzle's pool transaction: when its BEGIN
   * fails (the connection died while idle) it never returns the connection, and pool.end() at
   * close would wait for it forever. A connection that failed is dropped, not reused.
   */
  async transaction<T> (work: (tx: Transaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect()
    let failure: Error | undefined
    try {
      return await drizzle({ client }).transaction(work)
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error))
      throw error
    } finally {
      // Released with the error only when the connection itself is broken; a constraint error leaves it usable.
      client.release(failure !== undefined && translatePostgresError(failure) instanceof StoreUnavailableError ? failure : undefined)
    }
  }

  /** Runs a query, translating PostgreSQL's and the driver's errors into the store's. */
  async run<T> (query: () => Promise<T>): Promise<T> {
    try {
      return await query()
    } catch (error) {
      throw translatePostgresError(error)
    }
  }
}

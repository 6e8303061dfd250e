import { fileURLToPath } from 'node:url'
import { and, asc, count, eq, gt, isNull, ne, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import pg from 'pg'
import type { AccountStore, NewRefreshToken, NewUser, SigningKeyRecord, UserChanges } from '../store.js'
import { describeStartError, translatePostgresError } from './errors.js'
import { refreshTokens, signingKeys, users } from './schema.js'

const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url))

/** Connections per instance: N instances need N × POOL_SIZE of the server's max_connections. */
export const POOL_SIZE = 10
/** How long a request waits for a connection (pool full or server unreachable) before answering 503. */
const CONNECT_TIMEOUT_MS = 2000
/** The server cancels a statement after this (a lock held too long); the request answers 503. */
const STATEMENT_TIMEOUT_MS = 5000
/** The client gives up on an answer after this (the server or the network vanished without closing). */
const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 1000

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
  try {
    await migrateUnderLock(databaseUrl)
  } catch (error) {
    await pool.end()
    throw describeStartError(error, databaseUrl)
  }
  return new PostgresStore(pool, drizzle({ client: pool }))
}

// On a connection of its own, without the pool's timeouts: a later migration may build an index
// for longer than a request may wait. Closing it also releases the lock, whatever happened.
async function migrateUnderLock (databaseUrl: string): Promise<void> {
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

type Db = ReturnType<typeof drizzle>

class PostgresStore implements AccountStore {
  private closed = false

  constructor (private readonly pool: pg.Pool, private readonly db: Db) {}

  async createUser (user: NewUser) {
    const now = new Date()
    return this.run(async () => {
      const [created] = await this.db.insert(users).values({ ...user, createdAt: now, updatedAt: now }).returning()
      return created
    })
  }

  async findUserById (id: number) {
    return this.run(async () => (await this.db.select().from(users).where(eq(users.id, id)))[0])
  }

  async findUserByEmail (email: string) {
    return this.run(async () => (await this.db.select().from(users).where(eq(users.email, email)))[0])
  }

  async updateUser (id: number, changes: UserChanges) {
    return this.run(async () => (await this.db.update(users)
      .set({ ...changes, updatedAt: new Date() })
      .where(eq(users.id, id))
      .returning())[0])
  }

  async deleteUser (id: number) {
    // The refresh tokens go with the user (ON DELETE CASCADE).
    return this.run(async () => (await this.db.delete(users).where(eq(users.id, id)).returning({ id: users.id })).length > 0)
  }

  async listUsers (page: { limit: number, afterId?: number }) {
    return this.run(() => this.db.select().from(users)
      .where(gt(users.id, page.afterId ?? 0))
      .orderBy(asc(users.id))
      .limit(page.limit))
  }

  async createRefreshToken (token: NewRefreshToken) {
    await this.run(() => this.db.insert(refreshTokens).values({ ...token, createdAt: new Date() }))
  }

  async findRefreshToken (tokenHash: string) {
    return this.run(async () => (await this.db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, tokenHash)))[0])
  }

  async rotateRefreshToken (previousHash: string, successor: NewRefreshToken, now: Date) {
    // The conditional update takes the row's lock: a concurrent rotation on any instance waits for
    // our commit, then finds rotated_at set and updates nothing. The insert commits with it or not at all.
    return this.run(() => this.db.transaction(async (tx) => {
      const marked = await tx.update(refreshTokens)
        .set({ rotatedAt: now, replacedBy: successor.tokenHash })
        .where(and(eq(refreshTokens.tokenHash, previousHash), isNull(refreshTokens.rotatedAt), isNull(refreshTokens.revokedAt)))
        .returning({ tokenHash: refreshTokens.tokenHash })
      if (marked.length === 0) return false
      await tx.insert(refreshTokens).values({ ...successor, createdAt: now })
      return true
    }))
  }

  async revokeFamily (familyId: string, now: Date) {
    await this.run(() => this.db.update(refreshTokens)
      .set({ revokedAt: now })
      .where(and(eq(refreshTokens.familyId, familyId), isNull(refreshTokens.revokedAt))))
  }

  async revokeUserSessions (userId: number, now: Date, options: { exceptFamilyId?: string } = {}) {
    // One statement: the sessions counted are exactly the ones this update revoked.
    const revoked = await this.run(() => this.db.update(refreshTokens)
      .set({ revokedAt: now })
      .where(and(
        eq(refreshTokens.userId, userId),
        isNull(refreshTokens.revokedAt),
        options.exceptFamilyId === undefined ? undefined : ne(refreshTokens.familyId, options.exceptFamilyId)
      ))
      .returning({ familyId: refreshTokens.familyId }))
    return new Set(revoked.map(row => row.familyId)).size
  }

  async listSigningKeys () {
    return this.run(() => this.db.select().from(signingKeys).orderBy(signingKeys.createdAt))
  }

  async addSigningKey (key: SigningKeyRecord, options: { onlyIfNone?: boolean } = {}) {
    await this.run(() => this.db.transaction(async (tx) => {
      // Instances starting together serialise here (the lock ends with the transaction), so with
      // onlyIfNone the first key stored is the only one.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('account-service signing keys ' || current_schema()))`)
      if (options.onlyIfNone === true) {
        const [{ keys }] = await tx.select({ keys: count() }).from(signingKeys)
        if (keys > 0) return
      }
      await tx.insert(signingKeys).values(key)
    }))
  }

  async ping () {
    await this.run(() => this.pool.query('select 1'))
  }

  async close () {
    if (this.closed) return
    this.closed = true
    await this.pool.end()
  }

  /** Runs a query, translating PostgreSQL's and the driver's errors into the store's. */
  private async run<T> (query: () => Promise<T>): Promise<T> {
    try {
      return await query()
    } catch (error) {
      throw translatePostgresError(error)
    }
  }
}

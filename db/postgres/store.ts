import { fileURLToPath } from 'node:url'
import { and, asc, count, desc, eq, exists, gt, inArray, isNotNull, isNull, lte, ne, notExists, or, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import pg from 'pg'
import {
  StoreUnavailableError,
  type AccountStore, type NewOneTimeToken, type NewRefreshToken, type NewSession, type NewUser,
  type OneTimeTokenRecord, type SessionState, type SigningKeyRecord, type UserChanges
} from '../store.js'
import { describeStartError, translatePostgresError } from './errors.js'
import { oneTimeTokens, refreshTokens, sessions, signingKeys, users } from './schema.js'

const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url))

/** Connections per instance: N instances need N × POOL_SIZE of the server's max_connections. */
export const POOL_SIZE = 10
/** How long a request waits for a connection (pool full or server unreachable) before answering 503. */
const CONNECT_TIMEOUT_MS = 2000
/** The server cancels a statement after this (a lock held too long); the request answers 503. */
const STATEMENT_TIMEOUT_MS = 5000
/** The client gives up on an answer after this (the server or the network vanished without closing). */
const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 1000
/** Pruning leaves a session row without tokens alone this long: its login may be between its two inserts. */
const SESSION_ROW_GRACE_MS = 60_000

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
  return new PostgresStore(pool, db, prepareStatements(db))
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
type Transaction = Parameters<Parameters<Db['transaction']>[0]>[0]

// The query of every authenticated request, as a named prepared statement: each pooled connection
// parses and plans it once.
function prepareStatements (db: Db) {
  const placeholder = sql.placeholder
  return {
    // Immediate revocation: one lookup on refresh_tokens_family_idx.
    familyTokenState: db.select({
      tokens: count(),
      live: sql<number>`count(*) filter (where ${refreshTokens.revokedAt} is null and ${refreshTokens.expiresAt} > ${placeholder('now')})`.mapWith(Number)
    }).from(refreshTokens).where(eq(refreshTokens.familyId, placeholder('familyId'))).prepare('family_token_state')
  }
}

class PostgresStore implements AccountStore {
  private closed = false
  // The journal time of the newest migration this build ships, for ping.
  private readonly newestMigration = Math.max(...readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).map(migration => migration.folderMillis))

  constructor (private readonly pool: pg.Pool, private readonly db: Db, private readonly statements: ReturnType<typeof prepareStatements>) {}

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
    // The refresh tokens, sessions and one-time tokens go with the user (ON DELETE CASCADE).
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
    return this.run(() => this.transaction(async (tx) => {
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

  async pruneRefreshTokens (now: Date, limit: number) {
    // SKIP LOCKED: instances pruning at the same moment take different rows instead of waiting on each other.
    const prunable = this.db.select({ tokenHash: refreshTokens.tokenHash }).from(refreshTokens)
      .where(or(lte(refreshTokens.expiresAt, now), isNotNull(refreshTokens.revokedAt)))
      .limit(limit)
      .for('update', { skipLocked: true })
    // A session row whose tokens are all gone shows nowhere; the age bound spares one whose login is in flight.
    const orphanedSessions = this.db.select({ id: sessions.id }).from(sessions)
      .where(and(
        lte(sessions.createdAt, new Date(now.getTime() - SESSION_ROW_GRACE_MS)),
        notExists(this.db.select({ one: sql`1` }).from(refreshTokens).where(eq(refreshTokens.familyId, sessions.id)))
      ))
      .limit(limit)
      .for('update', { skipLocked: true })
    return this.run(() => this.transaction(async (tx) => {
      const pruned = await tx.delete(refreshTokens).where(inArray(refreshTokens.tokenHash, prunable))
      await tx.delete(sessions).where(inArray(sessions.id, orphanedSessions))
      return pruned.rowCount ?? 0
    }))
  }

  async setPasswordHash (userId: number, passwordHash: string, now: Date) {
    return this.run(async () => ((await this.db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId))).rowCount ?? 0) > 0)
  }

  async markEmailVerified (userId: number, email: string, now: Date) {
    return this.run(async () => ((await this.db.update(users)
      .set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now })
      .where(and(eq(users.id, userId), eq(users.email, email)))).rowCount ?? 0) > 0)
  }

  async createSession (session: NewSession, now: Date) {
    await this.run(() => this.db.insert(sessions).values({ ...session, createdAt: now, lastUsedAt: now }))
  }

  async touchSession (id: string, now: Date) {
    await this.run(() => this.db.update(sessions).set({ lastUsedAt: now }).where(eq(sessions.id, id)))
  }

  async findSession (id: string) {
    return this.run(async () => (await this.db.select().from(sessions).where(eq(sessions.id, id)))[0])
  }

  async listLiveSessions (userId: number, now: Date) {
    const liveToken = this.db.select({ one: sql`1` }).from(refreshTokens).where(and(
      eq(refreshTokens.familyId, sessions.id),
      isNull(refreshTokens.revokedAt),
      gt(refreshTokens.expiresAt, now)
    ))
    return this.run(() => this.db.select().from(sessions)
      .where(and(eq(sessions.userId, userId), exists(liveToken)))
      .orderBy(desc(sessions.createdAt)))
  }

  async sessionState (familyId: string, now: Date): Promise<SessionState> {
    const [state] = await this.run(() => this.statements.familyTokenState.execute({ familyId, now: now.toISOString() }))
    if (state === undefined || state.tokens === 0) return 'unknown'
    return state.live > 0 ? 'live' : 'revoked'
  }

  async issueOneTimeToken (token: NewOneTimeToken, now: Date) {
    await this.run(() => this.transaction(async (tx) => {
      // The user's row lock serialises two requests issuing at once (as SQLite's write lock does), so
      // the second voids the first's token and exactly one stays unused. (NO KEY UPDATE: the insert's
      // foreign-key check does not wait on it.)
      await tx.select({ id: users.id }).from(users).where(eq(users.id, token.userId)).for('no key update')
      await tx.update(oneTimeTokens).set({ usedAt: now }).where(and(
        eq(oneTimeTokens.userId, token.userId),
        eq(oneTimeTokens.purpose, token.purpose),
        isNull(oneTimeTokens.usedAt)
      ))
      await tx.insert(oneTimeTokens).values({ ...token, createdAt: now })
    }))
  }

  async findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined> {
    return this.run(async () => (await this.db.select().from(oneTimeTokens).where(eq(oneTimeTokens.tokenHash, tokenHash)))[0])
  }

  async useOneTimeToken (tokenHash: string, now: Date) {
    // The row lock of the conditional update: of two concurrent uses, the second finds used_at set.
    return this.run(async () => ((await this.db.update(oneTimeTokens)
      .set({ usedAt: now })
      .where(and(eq(oneTimeTokens.tokenHash, tokenHash), isNull(oneTimeTokens.usedAt)))).rowCount ?? 0) > 0)
  }

  async listSigningKeys () {
    return this.run(() => this.db.select().from(signingKeys).orderBy(signingKeys.createdAt))
  }

  async addSigningKey (key: SigningKeyRecord, options: { onlyIfNone?: boolean } = {}) {
    await this.run(() => this.transaction(async (tx) => {
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
  private async transaction<T> (work: (tx: Transaction) => Promise<T>): Promise<T> {
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
  private async run<T> (query: () => Promise<T>): Promise<T> {
    try {
      return await query()
    } catch (error) {
      throw translatePostgresError(error)
    }
  }
}

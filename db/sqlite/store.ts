import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { and, asc, count, countDistinct, desc, eq, exists, gt, inArray, isNotNull, isNull, lte, ne, notExists, or, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import {
  DuplicateValueError, StoreUnavailableError,
  type AccountStore, type NewOneTimeToken, type NewRefreshToken, type NewSession, type NewUser,
  type OneTimeTokenRecord, type SessionState, type SigningKeyRecord, type UserChanges
} from '../store.js'
import { oneTimeTokens, refreshTokens, sessions, signingKeys, users } from './schema.js'

const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url))

/** Pruning leaves a session row without tokens alone this long: its login may be between its two inserts. */
const SESSION_ROW_GRACE_MS = 60_000

/** How long a write waits for another process's lock (an admin command, a backup) before answering 503. */
const BUSY_TIMEOUT_MS = 2000

// SQLite result codes that mean "not now" rather than "never": the request gets 503 and may be retried.
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN|PROTOCOL|NOMEM)/

/**
 * Opens (creating if needed) the SQLite file at `filename`, or `:memory:`,
 * and applies the migrations.
 */
export function openSqliteStore (filename: string): AccountStore {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true })
  const connection = connect(filename)
  migrate(drizzle({ client: connection }), { migrationsFolder: MIGRATIONS_FOLDER })
  return new SqliteStore(connection, filename === ':memory:' ? undefined : () => connect(filename))
}

/**
 * One connection with our pragmas. WAL lets readers run beside the one writer.
 * synchronous=NORMAL (chosen over FULL, see the README's Storage section): in
 * WAL mode a committed transaction survives a crash of the process, and only an
 * OS crash or power loss can lose the last ones; FULL would sync on every commit,
 * blocking the whole process for milliseconds each time.
 */
function connect (filename: string): Database.Database {
  const connection = new Database(filename)
  connection.pragma('journal_mode = WAL')
  connection.pragma('synchronous = NORMAL')
  connection.pragma('foreign_keys = ON')
  // better-sqlite3 waits for a lock synchronously, holding up every request; give up after BUSY_TIMEOUT_MS with 503.
  connection.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  return connection
}

type Db = ReturnType<typeof drizzle>

// The queries of the request paths, compiled once per connection. (A partial update's SQL depends on
// which fields it sets, so updateUser is built per call.)
function prepareStatements (db: Db) {
  const placeholder = sql.placeholder
  return {
    userById: db.select().from(users).where(eq(users.id, placeholder('id'))).prepare(),
    userByEmail: db.select().from(users).where(eq(users.email, placeholder('email'))).prepare(),
    insertUser: db.insert(users).values({
      firstName: placeholder('firstName'),
      lastName: placeholder('lastName'),
      username: placeholder('username'),
      email: placeholder('email'),
      passwordHash: placeholder('passwordHash'),
      createdAt: placeholder('now'),
      updatedAt: placeholder('now')
    }).returning().prepare(),
    insertRefreshToken: db.insert(refreshTokens).values({
      tokenHash: placeholder('tokenHash'),
      userId: placeholder('userId'),
      familyId: placeholder('familyId'),
      expiresAt: placeholder('expiresAt'),
      createdAt: placeholder('now')
    }).prepare(),
    refreshTokenByHash: db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, placeholder('tokenHash'))).prepare(),
    markRotated: db.update(refreshTokens)
      .set({ rotatedAt: sql`${placeholder('now')}`, replacedBy: sql`${placeholder('replacedBy')}` })
      .where(and(eq(refreshTokens.tokenHash, placeholder('tokenHash')), isNull(refreshTokens.rotatedAt), isNull(refreshTokens.revokedAt)))
      .prepare(),
    revokeFamily: db.update(refreshTokens)
      .set({ revokedAt: sql`${placeholder('now')}` })
      .where(and(eq(refreshTokens.familyId, placeholder('familyId')), isNull(refreshTokens.revokedAt)))
      .prepare(),
    insertSession: db.insert(sessions).values({
      id: placeholder('id'),
      userId: placeholder('userId'),
      userAgent: placeholder('userAgent'),
      ip: placeholder('ip'),
      createdAt: placeholder('now'),
      lastUsedAt: placeholder('now')
    }).prepare(),
    touchSession: db.update(sessions).set({ lastUsedAt: sql`${placeholder('now')}` }).where(eq(sessions.id, placeholder('id'))).prepare(),
    // Run on every authenticated request (revocation is immediate): one indexed lookup on the family.
    familyTokenState: db.select({
      tokens: count(),
      live: sql<number>`sum(${refreshTokens.revokedAt} is null and ${refreshTokens.expiresAt} > ${placeholder('now')})`
    }).from(refreshTokens).where(eq(refreshTokens.familyId, placeholder('familyId'))).prepare(),
    signingKeyCount: db.select({ keys: count() }).from(signingKeys).prepare()
  }
}

class SqliteStore implements AccountStore {
  private db: Db
  private statements: ReturnType<typeof prepareStatements>
  /** Set when a write found the file read-only: the next query first reopens it (see run). */
  private readOnly = false

  constructor (private connection: Database.Database, private readonly reconnect?: () => Database.Database) {
    this.db = drizzle({ client: connection })
    this.statements = prepareStatements(this.db)
  }

  async createUser (user: NewUser) {
    return this.run(() => firstRow(this.statements.insertUser.all({ ...user, now: new Date() })))
  }

  async findUserById (id: number) {
    return this.run(() => this.statements.userById.get({ id }))
  }

  async findUserByEmail (email: string) {
    return this.run(() => this.statements.userByEmail.get({ email }))
  }

  async updateUser (id: number, changes: UserChanges) {
    return this.run(() => this.db.update(users)
      .set({ ...changes, updatedAt: new Date() })
      .where(eq(users.id, id))
      .returning()
      .all()[0]) // all(), not get(): see firstRow
  }

  async deleteUser (id: number) {
    // The refresh tokens go with the user (ON DELETE CASCADE).
    return this.run(() => this.db.delete(users).where(eq(users.id, id)).run().changes > 0)
  }

  async listUsers (page: { limit: number, afterId?: number }) {
    return this.run(() => this.db.select().from(users)
      .where(gt(users.id, page.afterId ?? 0))
      .orderBy(asc(users.id))
      .limit(page.limit)
      .all())
  }

  async createRefreshToken (token: NewRefreshToken) {
    this.run(() => this.statements.insertRefreshToken.run({ ...token, now: new Date() }))
  }

  async findRefreshToken (tokenHash: string) {
    return this.run(() => this.statements.refreshTokenByHash.get({ tokenHash }))
  }

  async rotateRefreshToken (previousHash: string, successor: NewRefreshToken, now: Date) {
    // Synchronous transaction: the conditional update and the insert commit together or not at all.
    return this.run(() => this.db.transaction(() => {
      const marked = this.statements.markRotated.run({ tokenHash: previousHash, now: now.getTime(), replacedBy: successor.tokenHash })
      if (marked.changes === 0) return false
      this.statements.insertRefreshToken.run({ ...successor, now })
      return true
    }, { behavior: 'immediate' }))
  }

  async revokeFamily (familyId: string, now: Date) {
    this.run(() => this.statements.revokeFamily.run({ familyId, now: now.getTime() }))
  }

  async revokeUserSessions (userId: number, now: Date, options: { exceptFamilyId?: string } = {}) {
    const live = and(
      eq(refreshTokens.userId, userId),
      isNull(refreshTokens.revokedAt),
      options.exceptFamilyId === undefined ? undefined : ne(refreshTokens.familyId, options.exceptFamilyId)
    )
    return this.run(() => this.db.transaction((tx) => {
      const sessions = tx.select({ families: countDistinct(refreshTokens.familyId) }).from(refreshTokens).where(live).get()?.families ?? 0
      tx.update(refreshTokens).set({ revokedAt: now }).where(live).run()
      return sessions
    }, { behavior: 'immediate' }))
  }

  async pruneRefreshTokens (now: Date, limit: number) {
    const prunable = this.db.select({ tokenHash: refreshTokens.tokenHash }).from(refreshTokens)
      .where(or(lte(refreshTokens.expiresAt, now), isNotNull(refreshTokens.revokedAt)))
      .limit(limit)
    // A session row whose tokens are all gone shows nowhere; the age bound spares one whose login is in flight.
    const orphanedSessions = this.db.select({ id: sessions.id }).from(sessions)
      .where(and(
        lte(sessions.createdAt, new Date(now.getTime() - SESSION_ROW_GRACE_MS)),
        notExists(this.db.select({ one: sql`1` }).from(refreshTokens).where(eq(refreshTokens.familyId, sessions.id)))
      ))
      .limit(limit)
    return this.run(() => this.db.transaction((tx) => {
      const pruned = tx.delete(refreshTokens).where(inArray(refreshTokens.tokenHash, prunable)).run().changes
      tx.delete(sessions).where(inArray(sessions.id, orphanedSessions)).run()
      return pruned
    }, { behavior: 'immediate' }))
  }

  async setPasswordHash (userId: number, passwordHash: string, now: Date) {
    return this.run(() => this.db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run().changes > 0)
  }

  async markEmailVerified (userId: number, email: string, now: Date) {
    return this.run(() => this.db.update(users)
      .set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now })
      .where(and(eq(users.id, userId), eq(users.email, email)))
      .run().changes > 0)
  }

  async createSession (session: NewSession, now: Date) {
    this.run(() => this.statements.insertSession.run({ ...session, now }))
  }

  async touchSession (id: string, now: Date) {
    this.run(() => this.statements.touchSession.run({ id, now: now.getTime() }))
  }

  async findSession (id: string) {
    return this.run(() => this.db.select().from(sessions).where(eq(sessions.id, id)).get())
  }

  async listLiveSessions (userId: number, now: Date) {
    const liveToken = this.db.select({ one: sql`1` }).from(refreshTokens).where(and(
      eq(refreshTokens.familyId, sessions.id),
      isNull(refreshTokens.revokedAt),
      gt(refreshTokens.expiresAt, now)
    ))
    return this.run(() => this.db.select().from(sessions)
      .where(and(eq(sessions.userId, userId), exists(liveToken)))
      .orderBy(desc(sessions.createdAt))
      .all())
  }

  async sessionState (familyId: string, now: Date): Promise<SessionState> {
    const state = this.run(() => this.statements.familyTokenState.get({ familyId, now: now.getTime() }))
    if (state === undefined || state.tokens === 0) return 'unknown'
    return Number(state.live) > 0 ? 'live' : 'revoked'
  }

  async issueOneTimeToken (token: NewOneTimeToken, now: Date) {
    this.run(() => this.db.transaction((tx) => {
      tx.update(oneTimeTokens).set({ usedAt: now }).where(and(
        eq(oneTimeTokens.userId, token.userId),
        eq(oneTimeTokens.purpose, token.purpose),
        isNull(oneTimeTokens.usedAt)
      )).run()
      tx.insert(oneTimeTokens).values({ ...token, createdAt: now }).run()
    }, { behavior: 'immediate' }))
  }

  async findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined> {
    return this.run(() => this.db.select().from(oneTimeTokens).where(eq(oneTimeTokens.tokenHash, tokenHash)).get())
  }

  async useOneTimeToken (tokenHash: string, now: Date) {
    return this.run(() => this.db.update(oneTimeTokens)
      .set({ usedAt: now })
      .where(and(eq(oneTimeTokens.tokenHash, tokenHash), isNull(oneTimeTokens.usedAt)))
      .run().changes > 0)
  }

  async listSigningKeys () {
    return this.run(() => this.db.select().from(signingKeys).orderBy(signingKeys.createdAt).all())
  }

  async addSigningKey (key: SigningKeyRecord, options: { onlyIfNone?: boolean } = {}) {
    this.run(() => this.db.transaction((tx) => {
      if (options.onlyIfNone === true && (this.statements.signingKeyCount.get()?.keys ?? 0) > 0) return
      tx.insert(signingKeys).values(key).run()
    }, { behavior: 'immediate' }))
  }

  async ping () {
    this.run(() => this.connection.prepare('select 1').get())
  }

  async close () {
    if (this.connection.open) this.connection.close()
  }

  /** Runs a synchronous query, translating SQLite's errors into the store's. */
  private run<T> (query: () => T): T {
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
  private reopen () {
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

/**
 * The row an INSERT … RETURNING gave. Such writes run with all(), never get(): get() stops
 * at the first row and resets the statement, and the commit that happens at that reset
 * (autocommit) can fail (disk full, I/O error) without better-sqlite3 reporting it, which
 * would acknowledge a write that was rolled back. all() steps to the end, commit included.
 */
function firstRow<T> (rows: T[]): T {
  if (rows.length === 0) throw new Error('INSERT … RETURNING gave no row')
  return rows[0]
}

function translateSqliteError (error: unknown): unknown {
  const sqliteError = findSqliteError(error)
  if (sqliteError === undefined) return error
  if (sqliteError.code === 'SQLITE_CONSTRAINT_UNIQUE') {
    if (sqliteError.message.includes('users.email')) return new DuplicateValueError('email')
    if (sqliteError.message.includes('users_username_lower_unique')) return new DuplicateValueError('username')
  }
  if (UNAVAILABLE_CODES.test(sqliteError.code)) return new StoreUnavailableError({ cause: error })
  return error
}

// Drizzle wraps the driver's error in DrizzleQueryError; the SqliteError is on the cause chain.
function findSqliteError (error: unknown): InstanceType<typeof Database.SqliteError> | undefined {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof Database.SqliteError) return current
  }
  return undefined
}

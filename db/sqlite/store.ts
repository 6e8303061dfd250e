import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { and, asc, count, countDistinct, eq, gt, isNull, ne, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import {
  DuplicateValueError, StoreUnavailableError,
  type AccountStore, type NewRefreshToken, type NewUser, type SigningKeyRecord, type UserChanges
} from '../store.js'
import { refreshTokens, signingKeys, users } from './schema.js'

const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url))

/** How long a write waits for another process's lock (an admin command, a backup) before answering 503. */
const BUSY_TIMEOUT_MS = 2000

// SQLite result codes that mean "not now" rather than "never": the request gets 503 and may be retried.
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN|PROTOCOL|NOMEM)/

/**
 * Opens (creating if needed) the SQLite file at `filename`, or `:memory:`,
 * and applies the migrations. WAL lets readers run beside the one writer;
 * synchronous=NORMAL in WAL mode keeps every committed transaction through a
 * process crash (only an OS crash or power loss can lose the last ones).
 */
export function openSqliteStore (filename: string): AccountStore {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true })
  const connection = new Database(filename)
  connection.pragma('journal_mode = WAL')
  connection.pragma('synchronous = NORMAL')
  connection.pragma('foreign_keys = ON')
  // better-sqlite3 waits for a lock synchronously, holding up every request; give up after BUSY_TIMEOUT_MS with 503.
  connection.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  const db = drizzle({ client: connection })
  migrate(db, { migrationsFolder: MIGRATIONS_FOLDER })
  return new SqliteStore(connection, db)
}

type Db = ReturnType<typeof drizzle>

class SqliteStore implements AccountStore {
  // The queries of the request paths, compiled once here. (A partial update's SQL depends on
  // which fields it sets, so updateUser is built per call.)
  private readonly statements

  constructor (private readonly connection: Database.Database, private readonly db: Db) {
    const placeholder = sql.placeholder
    this.statements = {
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
      signingKeyCount: db.select({ keys: count() }).from(signingKeys).prepare()
    }
  }

  async createUser (user: NewUser) {
    return this.run(() => this.statements.insertUser.get({ ...user, now: new Date() }))
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
      .get())
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
    try {
      return query()
    } catch (error) {
      throw translateSqliteError(error)
    }
  }
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

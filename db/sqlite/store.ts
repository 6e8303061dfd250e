import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { and, asc, count, desc, eq, exists, getTableColumns, gt, gte, inArray, isNotNull, isNull, lt, lte, max, ne, notExists, notInArray, or, sql, type SQL } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import {
  DuplicateValueError, IdentityTakenError, StoreUnavailableError,
  type AccountStore, type AddressProof, type AddressProofOutcome, type ClaimedSetup, type MailMessage, type MfaAttempt, type MfaProof, type MfaWrongCodeCap, type NewMfaChallenge, type NewOneTimeToken, type NewRefreshToken, type NewSecurityEvent,
  type NewIdentity, type NewSession, type NewUser, type OneTimeTokenPurpose, type OneTimeTokenQuota, type OneTimeTokenRecord, type SessionState,
  type SigningKeyRecord, type UnlinkOutcome, type UserChanges, type NewPasskey, type NewWebauthnChallenge, type PasskeyRecord, type WebauthnChallengePurpose
} from '../store.js'
import { decodeSecurityEvent, encodeDetail } from '../security-event-rows.js'
import * as outbox from './mail-outbox.js'
import {
  identities, mailOutbox, mfaChallenges, oneTimeTokens, recoveryCodes, refreshTokens, revocations, securityEvents, sessions, sessionStatusIndexes, settings,
  signingKeys, totpCredentials, users, passkeys, webauthnChallenges
} from './schema.js'

const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url))

/** Pruning leaves a session row without tokens alone this long: its login may be between its two inserts. */
const SESSION_ROW_GRACE_MS = 60_000

/** How long a write waits for another process's lock (an admin command, a backup) before answering 503. */
const BUSY_TIMEOUT_MS = 2000

/**
 * A checkpoint copies the WAL into the database file and syncs both: two
 * fsyncs, whatever the number of pages. SQLite's default runs one inside the
 * commit that crosses 1000 WAL pages (every ~200 refresh rotations), which
 * made checkpoints 60% of a rotation's cost. We checkpoint once a second off
 * the request path instead, keeping a far larger page limit as a backstop.
 */
const CHECKPOINT_INTERVAL_MS = 1000
const WAL_AUTOCHECKPOINT_PAGES = 10_000

// SQLite result codes that mean "not now" rather than "never": the request gets 503 and may be retried.
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN|PROTOCOL|NOMEM)/

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
  return new SqliteStore(connection, filename === ':memory:' ? undefined : () => connect(filename))
}

/**
 * One connection with our pragmas. WAL lets readers run beside the one writer.
 * synchronous=NORMAL (chosen over FULL, see docs/deploy.md, Storage): in
 * WAL mode a committed transaction survives a crash of the process, and only an
 * OS crash or power loss can lose the last ones; FULL would sync on every commit,
 * blocking the whole process for milliseconds each time.
 */
function connect (filename: string): Database.Database {
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
    // With its session's login time, which bounds how long the session may be refreshed (SESSION_MAX_AGE),
    // and its status-list index.
    refreshTokenByHash: db.select({ ...getTableColumns(refreshTokens), sessionStartedAt: sessions.createdAt, statusIndex: sessionStatusIndexes.statusIndex })
      .from(refreshTokens)
      .leftJoin(sessions, eq(sessions.id, refreshTokens.familyId))
      .leftJoin(sessionStatusIndexes, eq(sessionStatusIndexes.sessionId, refreshTokens.familyId))
      .where(eq(refreshTokens.tokenHash, placeholder('tokenHash'))).prepare(),
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
      lastUsedAt: placeholder('now'),
      authenticatedAt: placeholder('authenticatedAt')
    }).prepare(),
    touchSession: db.update(sessions).set({ lastUsedAt: sql`${placeholder('now')}` }).where(eq(sessions.id, placeholder('id'))).prepare(),
    // Run on every authenticated request (revocation is immediate): the family index, stopping at the first
    // token that keeps the session live (a family gathers a row per rotation until pruning, so no aggregate).
    liveFamilyToken: db.select({ one: sql<number>`1` }).from(refreshTokens)
      .where(and(eq(refreshTokens.familyId, placeholder('familyId')), isNull(refreshTokens.revokedAt), gt(refreshTokens.expiresAt, sql`${placeholder('now')}`)))
      .limit(1).prepare(),
    anyFamilyToken: db.select({ one: sql<number>`1` }).from(refreshTokens).where(eq(refreshTokens.familyId, placeholder('familyId'))).limit(1).prepare(),
    signingKeyCount: db.select({ keys: count() }).from(signingKeys).prepare(),
    // Polled by every instance a few times a second: a range of the primary key.
    revocationsAfter: db.select().from(revocations)
      .where(and(gt(revocations.seq, placeholder('afterSeq')), gte(revocations.revokedAt, sql`${placeholder('since')}`)))
      .orderBy(asc(revocations.seq)).limit(placeholder('limit')).prepare(),
    highestStatusIndex: db.select({ highest: max(sessionStatusIndexes.statusIndex) }).from(sessionStatusIndexes).prepare()
  }
}

interface PendingRotation {
  previousHash: string
  successor: NewRefreshToken
  now: Date
  resolve: (rotated: boolean) => void
  reject: (error: unknown) => void
}

class SqliteStore implements AccountStore {
  private db: Db
  private statements: ReturnType<typeof prepareStatements>
  /** Set when a write found the file read-only: the next query first reopens it (see run). */
  private readOnly = false
  private readonly checkpoints: NodeJS.Timeout
  private pendingRotations: PendingRotation[] = []
  // The journal time of the newest migration this build ships, for ping.
  private readonly newestMigration = Math.max(...readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).map(migration => migration.folderMillis))

  constructor (private connection: Database.Database, private readonly reconnect?: () => Database.Database) {
    this.db = drizzle({ client: connection })
    this.statements = prepareStatements(this.db)
    this.checkpoints = setInterval(() => {
      // PASSIVE never waits for readers or writers; a busy or failed checkpoint is retried at the next tick.
      try { this.connection.pragma('wal_checkpoint(PASSIVE)') } catch {}
    }, CHECKPOINT_INTERVAL_MS).unref()
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
    // The refresh tokens go with the user (ON DELETE CASCADE); the log tells every instance its sessions ended.
    const now = new Date()
    return this.run(() => this.db.transaction((tx) => {
      logRevocations(tx, and(eq(refreshTokens.userId, id), isNull(refreshTokens.revokedAt)), now, true)
      return tx.delete(users).where(eq(users.id, id)).run().changes > 0
    }, { behavior: 'immediate' }))
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
    return await new Promise<boolean>((resolve, reject) => {
      if (this.pendingRotations.push({ previousHash, successor, now, resolve, reject }) === 1) {
        setImmediate(() => this.commitRotations())
      }
    })
  }

  /**
   * Group commit: the rotations asked for in one turn of the event loop share
   * one transaction, so one set of WAL writes instead of one per rotation
   * (the writes were most of a rotation's cost). Each rotation is a savepoint
   * of its own: its conditional update and its insert land together or not at
   * all, and its failure touches no other. Every caller is answered after the
   * commit, so a rotation is as durable as before.
   */
  private commitRotations () {
    if (this.readOnly) this.reopen()
    const batch = this.pendingRotations
    this.pendingRotations = []
    const outcomes: Array<{ rotated: boolean } | { error: unknown }> = []
    try {
      const rotateOne = this.connection.transaction(({ previousHash, successor, now }: PendingRotation) => {
        const marked = this.statements.markRotated.run({ tokenHash: previousHash, now: now.getTime(), replacedBy: successor.tokenHash })
        if (marked.changes === 0) return false
        this.statements.insertRefreshToken.run({ ...successor, now })
        return true
      })
      this.connection.transaction(() => {
        for (const rotation of batch) {
          try {
            outcomes.push({ rotated: rotateOne(rotation) })
          } catch (error) {
            outcomes.push({ error: translateSqliteError(error) })
          }
        }
      }).immediate()
    } catch (error) {
      // BEGIN or COMMIT failed (busy, disk full, read-only, store closed): nothing was written, every rotation fails.
      if (findSqliteError(error)?.code.startsWith('SQLITE_READONLY') === true) this.readOnly = true
      for (const { reject } of batch) reject(translateSqliteError(error))
      return
    }
    batch.forEach(({ resolve, reject }, index) => {
      const outcome = outcomes[index]
      if ('error' in outcome) reject(outcome.error)
      else resolve(outcome.rotated)
    })
  }

  async revokeFamily (familyId: string, now: Date) {
    const live = and(eq(refreshTokens.familyId, familyId), isNull(refreshTokens.revokedAt))
    this.run(() => this.db.transaction((tx) => {
      if (logRevocations(tx, live, now, false) > 0) this.statements.revokeFamily.run({ familyId, now: now.getTime() })
    }, { behavior: 'immediate' }))
  }

  async revokeUserSessions (userId: number, now: Date, options: { exceptFamilyId?: string } = {}) {
    const live = and(
      eq(refreshTokens.userId, userId),
      isNull(refreshTokens.revokedAt),
      options.exceptFamilyId === undefined ? undefined : ne(refreshTokens.familyId, options.exceptFamilyId)
    )
    return this.run(() => this.db.transaction((tx) => {
      const sessions = revokeTokens(tx, live, now)
      voidMfaChallenges(tx, userId, now)
      return sessions
    }, { behavior: 'immediate' }))
  }

  async claimStatusIndex (sessionId: string, statusIndex: number) {
    return this.run(() => this.db.run(sql`insert into session_status_indexes (status_index, session_id)
      select ${statusIndex}, ${sessionId} where not exists (select 1 from revocations where status_index = ${statusIndex})
      on conflict (status_index) do nothing`).changes > 0)
  }

  async highestStatusIndex () {
    return this.run(() => this.statements.highestStatusIndex.get()?.highest ?? null)
  }

  async readRevocations (afterSeq: number, since: Date, limit: number) {
    return this.run(() => this.statements.revocationsAfter.all({ afterSeq, since: since.getTime(), limit }))
  }

  async pruneRevocations (before: Date) {
    return this.run(() => this.db.delete(revocations).where(lt(revocations.revokedAt, before)).run().changes)
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

  async setPasswordHash (userId: number, passwordHash: string | null, now: Date) {
    return this.run(() => this.db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run().changes > 0)
  }

  async findIdentity (provider: string, subject: string) {
    return this.run(() => this.db.select().from(identities).where(and(eq(identities.provider, provider), eq(identities.subject, subject))).get())
  }

  async listIdentities (userId: number) {
    return this.run(() => this.db.select().from(identities).where(eq(identities.userId, userId)).orderBy(asc(identities.createdAt), asc(identities.provider)).all())
  }

  async createUserWithIdentity (user: NewUser, identity: Omit<NewIdentity, 'userId'>, now: Date) {
    return this.run(() => this.db.transaction((tx) => {
      const created = firstRow(tx.insert(users).values({ ...user, createdAt: now, updatedAt: now }).returning().all())
      const linked = tx.insert(identities).values({ ...identity, userId: created.id, createdAt: now }).onConflictDoNothing().run().changes > 0
      if (!linked) throw new IdentityTakenError()
      return created
    }, { behavior: 'immediate' }))
  }

  async linkIdentity (identity: NewIdentity, now: Date) {
    return this.run(() => this.db.insert(identities).values({ ...identity, createdAt: now }).onConflictDoNothing().run().changes > 0)
  }

  async unlinkIdentity (userId: number, provider: string): Promise<UnlinkOutcome> {
    return this.run(() => this.db.transaction((tx) => {
      const linked = tx.select({ provider: identities.provider }).from(identities).where(eq(identities.userId, userId)).all()
      if (!linked.some(identity => identity.provider === provider)) return 'not_found'
      const user = tx.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get()
      // The ways to sign in that would be left: a password, the other identities, a passkey.
      const left = (user?.passwordHash == null ? 0 : 1) + linked.length - 1 + tx.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.userId, userId)).all().length
      if (left === 0) return 'last_login_method'
      tx.delete(identities).where(and(eq(identities.userId, userId), eq(identities.provider, provider))).run()
      return 'unlinked'
    }, { behavior: 'immediate' }))
  }

  async proveAddress (proof: AddressProof, now: Date): Promise<AddressProofOutcome> {
    try {
      // Immediate: the write lock is held from the first read, so the checks hold until the commit.
      return this.run(() => this.db.transaction((tx) => this.proveAddressIn(tx, proof, now), { behavior: 'immediate' }))
    } catch (error) {
      if (error instanceof IdentityConflict) return { outcome: 'identity_conflict' }
      throw error
    }
  }

  private proveAddressIn (tx: Tx, { userId, email, passwordHash, identity }: AddressProof, now: Date): AddressProofOutcome {
    const user = tx.select({ email: users.email, emailVerified: users.emailVerified }).from(users).where(eq(users.id, userId)).get()
    // Before any write: an identity that cannot be linked leaves the account as it was.
    if (identity !== undefined && identityConflicts(tx, userId, identity)) return { outcome: 'identity_conflict' }
    const userTokens = and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt))
    let sessionsEnded = 0
    const endAccess = () => {
      tx.update(oneTimeTokens).set({ usedAt: now }).where(and(eq(oneTimeTokens.userId, userId), isNull(oneTimeTokens.usedAt))).run()
      sessionsEnded += revokeTokens(tx, userTokens, now)
      // With the sessions, every pending second step (mfa_token), as revokeUserSessions does.
      voidMfaChallenges(tx, userId, now)
    }
    if (passwordHash !== undefined) {
      tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run()
      endAccess()
    }
    if (user === undefined || user.email !== email) return { outcome: 'email_changed', sessionsEnded }

    let claimed: ClaimedSetup | undefined
    if (!user.emailVerified) {
      // Nobody proved this address before: whoever registered it may not own it, nor what they set up.
      const passkeysRemoved = tx.delete(passkeys).where(eq(passkeys.userId, userId)).returning({ id: passkeys.id, name: passkeys.name }).all()
      tx.delete(webauthnChallenges).where(eq(webauthnChallenges.userId, userId)).run()
      tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
      tx.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId)).run()
      const totp = tx.delete(totpCredentials).where(eq(totpCredentials.userId, userId)).run().changes > 0
      const identitiesRemoved = tx.delete(identities).where(and(eq(identities.userId, userId), identity === undefined
        ? undefined
        : or(ne(identities.provider, identity.provider), ne(identities.subject, identity.subject))))
        .returning({ provider: identities.provider }).all().map(row => row.provider)
      // A provider sign-in clears the password; a reset replaced it above; the verification link keeps the registrant's.
      const passwordCleared = identity !== undefined
      if (passwordCleared) tx.update(users).set({ passwordHash: null }).where(eq(users.id, userId)).run()
      const removed = passkeysRemoved.length > 0 || totp || identitiesRemoved.length > 0
      // The sessions that set it all up end (and with them their access tokens, through the log).
      if (passwordHash === undefined && (passwordCleared || removed)) endAccess()
      claimed = { passwordCleared, passkeys: passkeysRemoved, totp, identities: identitiesRemoved }
      tx.update(users).set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now }).where(eq(users.id, userId)).run()
    }
    if (identity !== undefined) {
      tx.insert(identities).values({ ...identity, userId, createdAt: now }).onConflictDoNothing().run()
      // Linked by a request that raced this one, to another user or beside ours: undo everything.
      if (identityConflicts(tx, userId, identity)) throw new IdentityConflict()
    }
    return { outcome: 'proved', claimed, sessionsEnded }
  }

  async markEmailVerified (userId: number, email: string, now: Date) {
    return this.run(() => this.db.update(users)
      .set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now })
      .where(and(eq(users.id, userId), eq(users.email, email)))
      .run().changes > 0)
  }

  async createSession (session: NewSession, now: Date) {
    this.run(() => this.statements.insertSession.run({ ...session, now, authenticatedAt: session.authenticatedAt ?? now }))
  }

  async startSession (session: NewSession, token: NewRefreshToken, now: Date) {
    this.run(() => this.db.transaction(() => {
      this.statements.insertSession.run({ ...session, now, authenticatedAt: session.authenticatedAt ?? now })
      this.statements.insertRefreshToken.run({ ...token, now })
    }, { behavior: 'immediate' }))
  }

  async changePassword (userId: number, passwordHash: string, now: Date, keepSessionId: string) {
    const others = and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt), ne(refreshTokens.familyId, keepSessionId))
    return this.run(() => this.db.transaction((tx) => {
      tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId)).run()
      voidOneTimeTokens(tx, userId, now)
      const ended = revokeTokens(tx, others, now)
      voidMfaChallenges(tx, userId, now)
      tx.update(sessions).set({ authenticatedAt: now }).where(eq(sessions.id, keepSessionId)).run()
      return ended
    }, { behavior: 'immediate' }))
  }

  async changeEmail (userId: number, changes: UserChanges, now: Date, notice: MailMessage) {
    return this.run(() => this.db.transaction((tx) => {
      const user = tx.update(users).set({ ...changes, updatedAt: now }).where(eq(users.id, userId)).returning().all()[0]
      if (user === undefined) return { sessionsEnded: 0 }
      voidOneTimeTokens(tx, userId, now)
      tx.insert(mailOutbox).values(outbox.outboxRow(notice, now)).run()
      const sessionsEnded = revokeTokens(tx, and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt)), now)
      voidMfaChallenges(tx, userId, now)
      return { user, sessionsEnded }
    }, { behavior: 'immediate' }))
  }

  async markSessionAuthenticated (id: string, now: Date) {
    this.run(() => this.db.update(sessions).set({ authenticatedAt: now }).where(eq(sessions.id, id)).run())
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
    return this.run(() => {
      if (this.statements.liveFamilyToken.get({ familyId, now: now.getTime() }) !== undefined) return 'live'
      return this.statements.anyFamilyToken.get({ familyId }) === undefined ? 'unknown' : 'revoked'
    })
  }

  async issueOneTimeToken (token: NewOneTimeToken, now: Date, { liveLimit, quotas = [], mail }: { liveLimit: number, quotas?: OneTimeTokenQuota[], mail?: MailMessage }) {
    const sameKind = and(eq(oneTimeTokens.userId, token.userId), eq(oneTimeTokens.purpose, token.purpose), isNull(oneTimeTokens.usedAt))
    return this.run(() => this.db.transaction((tx) => {
      for (const { since, max } of quotas) {
        if (this.countIssued(tx, token.userId, token.purpose, since) >= max) return false
      }
      tx.insert(oneTimeTokens).values({ ...token, createdAt: now }).run()
      const newest = tx.select({ tokenHash: oneTimeTokens.tokenHash }).from(oneTimeTokens)
        .where(sameKind).orderBy(desc(oneTimeTokens.createdAt), desc(sql`rowid`)).limit(liveLimit)
      tx.update(oneTimeTokens).set({ usedAt: now }).where(and(sameKind, notInArray(oneTimeTokens.tokenHash, newest))).run()
      if (mail !== undefined) tx.insert(mailOutbox).values(outbox.outboxRow(mail, now)).run()
      return true
    }, { behavior: 'immediate' }))
  }

  private countIssued (tx: Pick<Db, 'select'>, userId: number, purpose: OneTimeTokenPurpose, since: Date): number {
    return tx.select({ issued: count() }).from(oneTimeTokens)
      .where(and(eq(oneTimeTokens.userId, userId), eq(oneTimeTokens.purpose, purpose), gte(oneTimeTokens.createdAt, since)))
      .get()?.issued ?? 0
  }

  async findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined> {
    return this.run(() => this.db.select().from(oneTimeTokens).where(eq(oneTimeTokens.tokenHash, tokenHash)).get())
  }

  async useOneTimeToken (tokenHash: string, now: Date) {
    return this.run(() => this.db.transaction((tx) => {
      const [used] = tx.update(oneTimeTokens).set({ usedAt: now })
        .where(and(eq(oneTimeTokens.tokenHash, tokenHash), isNull(oneTimeTokens.usedAt)))
        .returning({ userId: oneTimeTokens.userId, purpose: oneTimeTokens.purpose }).all()
      if (used === undefined) return false
      tx.update(oneTimeTokens).set({ usedAt: now })
        .where(and(eq(oneTimeTokens.userId, used.userId), eq(oneTimeTokens.purpose, used.purpose), isNull(oneTimeTokens.usedAt))).run()
      return true
    }, { behavior: 'immediate' }))
  }

  async voidOneTimeTokens (userId: number, now: Date) {
    this.run(() => voidOneTimeTokens(this.db, userId, now))
  }

  async recordSecurityEvent (event: NewSecurityEvent) {
    this.run(() => this.db.insert(securityEvents).values({ ...event, detail: encodeDetail(event.detail) }).run())
  }

  async listSecurityEvents (userId: number, page: { limit: number, beforeId?: number }) {
    return this.run(() => this.db.select().from(securityEvents)
      .where(and(eq(securityEvents.userId, userId), page.beforeId === undefined ? undefined : lt(securityEvents.id, page.beforeId)))
      .orderBy(desc(securityEvents.id))
      .limit(page.limit)
      .all()
      .map(decodeSecurityEvent))
  }

  async pruneSecurityEvents (olderThan: Date, limit: number) {
    const prunable = this.db.select({ id: securityEvents.id }).from(securityEvents).where(lt(securityEvents.createdAt, olderThan)).limit(limit)
    return this.run(() => this.db.delete(securityEvents).where(inArray(securityEvents.id, prunable)).run().changes)
  }

  async enqueueMail (mail: MailMessage, now: Date) {
    this.run(() => this.db.insert(mailOutbox).values(outbox.outboxRow(mail, now)).run())
  }

  async claimMails (now: Date, claimedUntil: Date, limit: number) {
    return this.run(() => outbox.claimMails(this.db, now, claimedUntil, limit))
  }

  async markMailSent (id: number, now: Date) {
    this.run(() => outbox.markMailSent(this.db, id, now))
  }

  async retryMail (id: number, retryAt: Date, error: string) {
    this.run(() => outbox.retryMail(this.db, id, retryAt, error))
  }

  async markMailFailed (id: number, now: Date, error: string) {
    this.run(() => outbox.markMailFailed(this.db, id, now, error))
  }

  async countPendingMails () {
    return this.run(() => outbox.countPendingMails(this.db))
  }

  async pruneMails (finishedBefore: Date, limit: number) {
    return this.run(() => outbox.pruneMails(this.db, finishedBefore, limit))
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

  async replaceSigningKeyPrivateHalf (kid: string, expected: string, replacement: string | null) {
    return this.run(() => this.db.update(signingKeys).set({ privateKeyPem: replacement })
      .where(and(eq(signingKeys.kid, kid), eq(signingKeys.privateKeyPem, expected))).run().changes === 1)
  }

  async createPasskey (passkey: NewPasskey, now: Date) {
    return this.run(() => this.db.insert(passkeys).values(passkeyRow(passkey, now)).onConflictDoNothing().run().changes > 0)
  }

  async listPasskeys (userId: number) {
    return this.run(() => this.db.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(asc(passkeys.createdAt), asc(sql`rowid`)).all().map(toPasskey))
  }

  async findPasskeyByCredentialId (credentialId: string) {
    return this.run(() => {
      const row = this.db.select().from(passkeys).where(eq(passkeys.credentialId, credentialId)).get()
      return row === undefined ? undefined : toPasskey(row)
    })
  }

  async renamePasskey (userId: number, id: string, name: string) {
    return this.run(() => {
      const rows = this.db.update(passkeys).set({ name }).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId))).returning().all()
      return rows.length === 0 ? undefined : toPasskey(rows[0])
    })
  }

  async deletePasskey (userId: number, id: string) {
    return this.run(() => this.db.delete(passkeys).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId))).run().changes > 0)
  }

  async recordPasskeyUse (id: string, counter: number, now: Date) {
    // One conditional statement: of two logins racing with counters n and n+1, a later write of n is refused.
    return this.run(() => this.db.update(passkeys).set({ counter, lastUsedAt: now })
      .where(and(eq(passkeys.id, id), counterGrows(passkeys.counter, counter))).run().changes > 0)
  }

  async createWebauthnChallenge (challenge: NewWebauthnChallenge, now: Date) {
    this.run(() => this.db.transaction((tx) => {
      tx.delete(webauthnChallenges).where(lte(webauthnChallenges.expiresAt, now)).run()
      tx.insert(webauthnChallenges).values({ ...challenge, createdAt: now }).run()
    }))
  }

  async consumeWebauthnChallenge (challengeHash: string, purpose: WebauthnChallengePurpose, now: Date, userId?: number) {
    return this.run(() => {
      const owner = userId === undefined ? undefined : eq(webauthnChallenges.userId, userId)
      const [used] = this.db.delete(webauthnChallenges)
        .where(and(eq(webauthnChallenges.challengeHash, challengeHash), eq(webauthnChallenges.purpose, purpose), owner))
        .returning({ expiresAt: webauthnChallenges.expiresAt }).all()
      return used !== undefined && used.expiresAt > now
    })
  }

  async saveTotpSecret (userId: number, secret: string, now: Date) {
    // A confirmed secret is never replaced here: turning TOTP off (deleteTotp) comes first.
    return this.run(() => this.db.insert(totpCredentials).values({ userId, secret, createdAt: now })
      .onConflictDoUpdate({ target: totpCredentials.userId, set: { secret, createdAt: now, lastUsedStep: null }, setWhere: isNull(totpCredentials.confirmedAt) })
      .run().changes > 0)
  }

  async findTotp (userId: number) {
    return this.run(() => this.db.select().from(totpCredentials).where(eq(totpCredentials.userId, userId)).get())
  }

  async confirmTotp (userId: number, step: number, recoveryCodeHashes: string[], now: Date) {
    return this.run(() => this.db.transaction((tx) => {
      const confirmed = tx.update(totpCredentials).set({ confirmedAt: now, lastUsedStep: step })
        .where(and(eq(totpCredentials.userId, userId), isNull(totpCredentials.confirmedAt))).run().changes > 0
      if (confirmed) this.writeRecoveryCodes(tx, userId, recoveryCodeHashes, now)
      return confirmed
    }, { behavior: 'immediate' }))
  }

  async deleteTotp (userId: number) {
    return this.run(() => this.db.transaction((tx) => {
      tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
      tx.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId)).run()
      return tx.delete(totpCredentials).where(eq(totpCredentials.userId, userId)).run().changes > 0
    }, { behavior: 'immediate' }))
  }

  async replaceRecoveryCodes (userId: number, codeHashes: string[], now: Date) {
    return this.run(() => this.db.transaction((tx) => {
      const enabled = tx.select({ one: sql`1` }).from(totpCredentials)
        .where(and(eq(totpCredentials.userId, userId), isNotNull(totpCredentials.confirmedAt))).get() !== undefined
      if (enabled) this.writeRecoveryCodes(tx, userId, codeHashes, now)
      return enabled
    }, { behavior: 'immediate' }))
  }

  /** The user's recovery codes become `codeHashes`, all unused (inside a transaction). */
  private writeRecoveryCodes (tx: Tx, userId: number, codeHashes: string[], now: Date) {
    tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
    if (codeHashes.length > 0) tx.insert(recoveryCodes).values(codeHashes.map(codeHash => ({ userId, codeHash, createdAt: now }))).run()
  }

  async countRecoveryCodes (userId: number) {
    return this.run(() => this.db.select({ left: count() }).from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt))).get()?.left ?? 0)
  }

  async createMfaChallenge (challenge: NewMfaChallenge, now: Date, maxFailures: number) {
    this.run(() => this.db.transaction((tx) => {
      tx.delete(mfaChallenges).where(and(
        eq(mfaChallenges.userId, challenge.userId),
        or(isNotNull(mfaChallenges.usedAt), lte(mfaChallenges.expiresAt, now), gte(mfaChallenges.failures, maxFailures))
      )).run()
      tx.insert(mfaChallenges).values({ ...challenge, createdAt: now }).run()
    }, { behavior: 'immediate' }))
  }

  async findMfaChallenge (tokenHash: string) {
    return this.run(() => this.db.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)).get())
  }

  async voidMfaChallenges (userId: number, now: Date) {
    this.run(() => voidMfaChallenges(this.db, userId, now))
  }

  async attemptMfaChallenge (tokenHash: string, proof: MfaProof | null, now: Date, maxFailures: number, cap: MfaWrongCodeCap): Promise<MfaAttempt> {
    // Synchronous from the challenge's check to its last write, under the write lock: attempts cannot interleave.
    return this.run(() => this.db.transaction((tx): MfaAttempt => {
      const challenge = tx.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)).get()
      if (challenge === undefined || challenge.usedAt !== null || challenge.expiresAt <= now || challenge.failures >= maxFailures) return { outcome: 'invalid' }
      const { userId } = challenge
      const ofUser = eq(totpCredentials.userId, userId)
      const failedCodes = tx.select({ failedCodes: totpCredentials.failedCodes }).from(totpCredentials).where(ofUser).get()?.failedCodes
      if (failedCodes !== undefined && failedCodes >= cap.maxWrongCodes) return { outcome: 'locked', userId }
      if (proof !== null && consumeProof(tx, userId, proof, now)) {
        tx.update(mfaChallenges).set({ usedAt: now }).where(eq(mfaChallenges.tokenHash, tokenHash)).run()
        tx.update(totpCredentials).set({ failedCodes: 0 }).where(ofUser).run()
        return { outcome: 'passed', userId }
      }
      tx.update(mfaChallenges).set({ failures: sql`${mfaChallenges.failures} + 1` }).where(eq(mfaChallenges.tokenHash, tokenHash)).run()
      const refused = { outcome: 'refused' as const, userId, failures: challenge.failures + 1 }
      if (failedCodes === undefined) return refused
      tx.update(totpCredentials).set({ failedCodes: sql`${totpCredentials.failedCodes} + 1` }).where(ofUser).run()
      if (failedCodes + 1 < cap.maxWrongCodes) return refused
      if (cap.lockedMail !== undefined) tx.insert(mailOutbox).values(outbox.outboxRow(cap.lockedMail, now)).run()
      return { ...refused, lockedNow: true }
    }, { behavior: 'immediate' }))
  }

  async forgiveMfaFailures (userId: number, keepAtMost: number) {
    this.run(() => this.db.update(totpCredentials).set({ failedCodes: sql`min(${totpCredentials.failedCodes}, ${keepAtMost})` })
      .where(eq(totpCredentials.userId, userId)).run())
  }

  async readSetting (name: string) {
    return this.run(() => this.db.select({ value: settings.value }).from(settings).where(eq(settings.name, name)).get()?.value)
  }

  async writeSetting (name: string, value: string, options: { onlyIfNone?: boolean } = {}) {
    this.run(() => {
      const insert = this.db.insert(settings).values({ name, value })
      if (options.onlyIfNone === true) insert.onConflictDoNothing().run()
      else insert.onConflictDoUpdate({ target: settings.name, set: { value } }).run()
    })
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

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/**
 * Writes a revocation-log row for each session that has a refresh token matching `tokens` (call it
 * before revoking them, in the same transaction). Returns how many sessions it logged.
 */
function logRevocations (tx: Tx, tokens: SQL | undefined, now: Date, userDeleted: boolean): number {
  return tx.run(sql`insert into revocations (session_id, user_id, status_index, user_deleted, revoked_at)
    select t.family_id, t.user_id, s.status_index, ${userDeleted ? 1 : 0}, ${now.getTime()}
    from (select ${refreshTokens.familyId} as family_id, min(${refreshTokens.userId}) as user_id from ${refreshTokens}
      where ${tokens} group by ${refreshTokens.familyId}) t
    left join session_status_indexes s on s.session_id = t.family_id`).changes
}

/** Marks the user's unused mailed one-time tokens used. */
function voidOneTimeTokens (tx: Tx | Db, userId: number, now: Date): void {
  tx.update(oneTimeTokens).set({ usedAt: now }).where(and(eq(oneTimeTokens.userId, userId), isNull(oneTimeTokens.usedAt))).run()
}

/** Revokes the live refresh tokens matching `live`, with a revocation-log row per session; returns how many sessions. */
function revokeTokens (tx: Tx, live: SQL | undefined, now: Date): number {
  // One log row per session: their count is the number of sessions revoked.
  const sessions = logRevocations(tx, live, now, false)
  tx.update(refreshTokens).set({ revokedAt: now }).where(live).run()
  return sessions
}

/** Thrown inside proveAddress's transaction to roll it back. */
class IdentityConflict extends Error {}

/** Whether the identity is another user's, or the user has another one at its provider. */
function identityConflicts (tx: Tx, userId: number, identity: AddressProof['identity'] & object): boolean {
  const atProvider = tx.select({ userId: identities.userId, subject: identities.subject }).from(identities)
    .where(and(eq(identities.provider, identity.provider), or(eq(identities.subject, identity.subject), eq(identities.userId, userId)))).all()
  return atProvider.some(row => row.userId !== userId || row.subject !== identity.subject)
}

/** Marks the user's unused MFA challenges used: their mfa_tokens verify nothing any more. */
function voidMfaChallenges (tx: Tx | Db, userId: number, now: Date): void {
  tx.update(mfaChallenges).set({ usedAt: now }).where(and(eq(mfaChallenges.userId, userId), isNull(mfaChallenges.usedAt))).run()
}

/** Uses a TOTP step (newer than the last used, of a confirmed secret) or an unused recovery code; false when it cannot. */
function consumeProof (tx: Tx, userId: number, proof: MfaProof, now: Date): boolean {
  if ('totpStep' in proof) {
    return tx.update(totpCredentials).set({ lastUsedStep: proof.totpStep }).where(and(
      eq(totpCredentials.userId, userId),
      isNotNull(totpCredentials.confirmedAt),
      or(isNull(totpCredentials.lastUsedStep), lt(totpCredentials.lastUsedStep, proof.totpStep))
    )).run().changes > 0
  }
  return tx.update(recoveryCodes).set({ usedAt: now }).where(and(
    eq(recoveryCodes.userId, userId), eq(recoveryCodes.codeHash, proof.recoveryCodeHash), isNull(recoveryCodes.usedAt)
  )).run().changes > 0
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

function passkeyRow (passkey: NewPasskey, now: Date) {
  return { ...passkey, transports: passkey.transports.join(','), createdAt: now }
}

function toPasskey (row: typeof passkeys.$inferSelect): PasskeyRecord {
  return { ...row, transports: row.transports === '' ? [] : row.transports.split(',') }
}

/** The WebAuthn rule: a counter must grow, unless the authenticator keeps none (0 stored, 0 presented). */
function counterGrows (stored: typeof passkeys.counter, presented: number): SQL | undefined {
  return presented === 0 ? eq(stored, 0) : lt(stored, presented)
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

import { fileURLToPath } from 'node:url'
import { and, asc, count, desc, eq, exists, getTableColumns, gt, gte, inArray, isNotNull, isNull, lt, lte, ne, notExists, notInArray, or, sql, type SQL } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import pg from 'pg'
import {
  IdentityTakenError, StoreUnavailableError,
  type AccountStore, type AddressProof, type AddressProofOutcome, type ClaimedSetup, type MailMessage, type MfaAttempt, type MfaProof, type MfaWrongCodeCap, type NewMfaChallenge, type NewOneTimeToken, type NewRefreshToken, type NewSecurityEvent,
  type NewIdentity, type NewSession, type NewUser, type OneTimeTokenQuota, type OneTimeTokenRecord, type SessionState, type SigningKeyRecord, type UnlinkOutcome,
  type UserChanges, type NewPasskey, type NewWebauthnChallenge, type PasskeyRecord, type WebauthnChallengePurpose
} from '../store.js'
import { decodeSecurityEvent, encodeDetail } from '../security-event-rows.js'
import { describeStartError, translatePostgresError } from './errors.js'
import * as outbox from './mail-outbox.js'
import {
  identities, mailOutbox, mfaChallenges, oneTimeTokens, recoveryCodes, refreshTokens, revocations, securityEvents, sessions, sessionStatusIndexes, settings,
  signingKeys, totpCredentials, users, passkeys, webauthnChallenges
} from './schema.js'

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
    }).from(refreshTokens).where(eq(refreshTokens.familyId, placeholder('familyId'))).prepare('family_token_state'),
    // Polled by every instance a few times a second: a range of the primary key.
    revocationsAfter: db.select().from(revocations)
      .where(and(gt(revocations.seq, placeholder('afterSeq')), gte(revocations.revokedAt, sql`${placeholder('since')}`)))
      .orderBy(asc(revocations.seq)).limit(placeholder('limit')).prepare('revocations_after'),
    // With its session's login time, which bounds how long the session may be refreshed (SESSION_MAX_AGE),
    // and its status-list index.
    refreshTokenByHash: db.select({ ...getTableColumns(refreshTokens), sessionStartedAt: sessions.createdAt, statusIndex: sessionStatusIndexes.statusIndex })
      .from(refreshTokens)
      .leftJoin(sessions, eq(sessions.id, refreshTokens.familyId))
      .leftJoin(sessionStatusIndexes, eq(sessionStatusIndexes.sessionId, refreshTokens.familyId))
      .where(eq(refreshTokens.tokenHash, placeholder('tokenHash'))).prepare('refresh_token_by_hash')
  }
}

/**
 * An INSERT of a revocation-log row per session among the refresh tokens of `source` (the table by
 * default, or a CTE) matching `where`, for use inside a WITH; returns the rows it wrote.
 */
function logRevocations (where: SQL, now: Date, userDeleted: boolean, source: SQL = sql`refresh_tokens`): SQL {
  return sql`insert into revocations (session_id, user_id, status_index, user_deleted, revoked_at)
    select t.family_id, t.user_id, s.status_index, ${userDeleted}, ${now}
    from (select family_id, min(user_id) as user_id from ${source} where ${where} group by family_id) t
    left join session_status_indexes s on s.session_id = t.family_id
    returning seq`
}

/**
 * Revokes the refresh tokens matching `tokens` and writes a log row per session they belong to, in
 * one statement (the sessions logged are exactly the ones this update revoked). Returns how many.
 */
async function revokeTokensWith (db: Db | Transaction, tokens: SQL, now: Date, alsoWith: SQL = sql``): Promise<number> {
  const result = await db.execute<{ sessions: number }>(sql`
    with revoked as (update refresh_tokens set revoked_at = ${now} where ${tokens} returning family_id, user_id),
    logged as (${logRevocations(sql`true`, now, false, sql`revoked`)})${alsoWith}
    select count(*)::int as sessions from logged`)
  return result.rows[0].sessions
}

/** Thrown inside proveAddress's transaction to roll it back. */
class IdentityConflict extends Error {}

/** Whether the identity is another user's, or the user has another one at its provider. */
async function identityConflicts (tx: Transaction, userId: number, identity: AddressProof['identity'] & object): Promise<boolean> {
  const atProvider = await tx.select({ userId: identities.userId, subject: identities.subject }).from(identities)
    .where(and(eq(identities.provider, identity.provider), or(eq(identities.subject, identity.subject), eq(identities.userId, userId))))
  return atProvider.some(row => row.userId !== userId || row.subject !== identity.subject)
}

/** The UPDATE that marks the user's unused mailed one-time tokens used. */
function voidOneTimeTokens (userId: number, now: Date): SQL {
  return sql`update one_time_tokens set used_at = ${now} where user_id = ${userId} and used_at is null`
}

/** The UPDATE that marks the user's unused MFA challenges used (their mfa_tokens verify nothing any more); a statement of its own or a WITH clause. */
function voidMfaChallenges (userId: number, now: Date): SQL {
  return sql`update mfa_challenges set used_at = ${now} where user_id = ${userId} and used_at is null`
}

/** The user's recovery codes become `codeHashes`, all unused (inside a transaction). */
async function writeRecoveryCodes (tx: Transaction, userId: number, codeHashes: string[], now: Date): Promise<void> {
  await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
  if (codeHashes.length > 0) await tx.insert(recoveryCodes).values(codeHashes.map(codeHash => ({ userId, codeHash, createdAt: now })))
}

/**
 * Uses a TOTP step (newer than the last used, of a confirmed secret) or an unused recovery code;
 * false when it cannot. The conditional update takes the row's lock: of two transactions using one
 * code at once, the second waits, then finds the condition false (READ COMMITTED re-reads the row).
 */
async function consumeProof (tx: Transaction, userId: number, proof: MfaProof, now: Date): Promise<boolean> {
  if ('totpStep' in proof) {
    const used = await tx.update(totpCredentials).set({ lastUsedStep: proof.totpStep }).where(and(
      eq(totpCredentials.userId, userId),
      isNotNull(totpCredentials.confirmedAt),
      or(isNull(totpCredentials.lastUsedStep), lt(totpCredentials.lastUsedStep, proof.totpStep))
    )).returning({ userId: totpCredentials.userId })
    return used.length > 0
  }
  const used = await tx.update(recoveryCodes).set({ usedAt: now }).where(and(
    eq(recoveryCodes.userId, userId), eq(recoveryCodes.codeHash, proof.recoveryCodeHash), isNull(recoveryCodes.usedAt)
  )).returning({ userId: recoveryCodes.userId })
  return used.length > 0
}

/** AccountStore.proveAddress inside its transaction. */
async function proveAddressIn (tx: Transaction, { userId, email, passwordHash, identity }: AddressProof, now: Date): Promise<AddressProofOutcome> {
  // The user's row locked: proofs, unlinks and password changes of this user judge one after the other.
  const [user] = await tx.select({ email: users.email, emailVerified: users.emailVerified }).from(users).where(eq(users.id, userId)).for('update')
  // Before any write: an identity that cannot be linked leaves the account as it was.
  if (identity !== undefined && await identityConflicts(tx, userId, identity)) return { outcome: 'identity_conflict' }
  let sessionsEnded = 0
  const endAccess = async () => {
    await tx.update(oneTimeTokens).set({ usedAt: now }).where(and(eq(oneTimeTokens.userId, userId), isNull(oneTimeTokens.usedAt)))
    // The sessions end, and with them every pending second step (mfa_token), as revokeUserSessions does.
    sessionsEnded += await revokeTokensWith(tx, sql`user_id = ${userId} and revoked_at is null`, now, sql`,
      voided as (${voidMfaChallenges(userId, now)})`)
  }
  if (passwordHash !== undefined) {
    await tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId))
    await endAccess()
  }
  if (user === undefined || user.email !== email) return { outcome: 'email_changed', sessionsEnded }

  let claimed: ClaimedSetup | undefined
  if (!user.emailVerified) {
    // Nobody proved this address before: whoever registered it may not own it, nor what they set up.
    const passkeysRemoved = await tx.delete(passkeys).where(eq(passkeys.userId, userId)).returning({ id: passkeys.id, name: passkeys.name })
    await tx.delete(webauthnChallenges).where(eq(webauthnChallenges.userId, userId))
    await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
    await tx.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId))
    const totp = ((await tx.delete(totpCredentials).where(eq(totpCredentials.userId, userId))).rowCount ?? 0) > 0
    const identitiesRemoved = (await tx.delete(identities).where(and(eq(identities.userId, userId), identity === undefined
      ? undefined
      : or(ne(identities.provider, identity.provider), ne(identities.subject, identity.subject))))
      .returning({ provider: identities.provider })).map(row => row.provider)
    // A provider sign-in clears the password; a reset replaced it above; the verification link keeps the registrant's.
    const passwordCleared = identity !== undefined
    if (passwordCleared) await tx.update(users).set({ passwordHash: null }).where(eq(users.id, userId))
    const removed = passkeysRemoved.length > 0 || totp || identitiesRemoved.length > 0
    // The sessions that set it all up end (and with them their access tokens, through the log).
    if (passwordHash === undefined && (passwordCleared || removed)) await endAccess()
    claimed = { passwordCleared, passkeys: passkeysRemoved, totp, identities: identitiesRemoved }
    await tx.update(users).set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now }).where(eq(users.id, userId))
  }
  if (identity !== undefined) {
    await tx.insert(identities).values({ ...identity, userId, createdAt: now }).onConflictDoNothing()
    // Linked by a request that raced this one, to another user or beside ours: undo everything.
    if (await identityConflicts(tx, userId, identity)) throw new IdentityConflict()
  }
  return { outcome: 'proved', claimed, sessionsEnded }
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
    // The refresh tokens, sessions and one-time tokens go with the user (ON DELETE CASCADE); the
    // log row of each live session, written in the same statement, tells every instance they ended.
    const now = new Date()
    const result = await this.run(() => this.db.execute<{ deleted: number }>(sql`
      with logged as (${logRevocations(sql`user_id = ${id} and revoked_at is null`, now, true)}),
      deleted as (delete from users where id = ${id} returning id)
      select count(*)::int as deleted from deleted`))
    return result.rows[0].deleted > 0
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
    return this.run(async () => (await this.statements.refreshTokenByHash.execute({ tokenHash }))[0])
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
    await this.revokeTokens(sql`family_id = ${familyId} and revoked_at is null`, now)
  }

  async revokeUserSessions (userId: number, now: Date, options: { exceptFamilyId?: string } = {}) {
    const except = options.exceptFamilyId === undefined ? sql`` : sql` and family_id <> ${options.exceptFamilyId}`
    return await this.revokeTokens(sql`user_id = ${userId} and revoked_at is null${except}`, now, sql`,
      voided as (${voidMfaChallenges(userId, now)})`)
  }

  /**
   * Revokes the refresh tokens matching `tokens` and writes a log row per session they belong to, in
   * one statement (the sessions logged are exactly the ones this update revoked), with `alsoWith`'s
   * writes (more WITH clauses: PostgreSQL runs each once, whether the query reads them or not). Returns how many.
   */
  private async revokeTokens (tokens: SQL, now: Date, alsoWith: SQL = sql``): Promise<number> {
    return await this.run(() => revokeTokensWith(this.db, tokens, now, alsoWith))
  }

  async claimStatusIndex (sessionId: string, statusIndex: number) {
    const claimed = await this.run(() => this.db.execute(sql`
      insert into session_status_indexes (status_index, session_id)
      select ${statusIndex}, ${sessionId} where not exists (select 1 from revocations where status_index = ${statusIndex})
      on conflict (status_index) do nothing`))
    return (claimed.rowCount ?? 0) > 0
  }

  async highestStatusIndex () {
    const highest = await this.run(() => this.db.execute<{ highest: number | null }>(sql`select max(status_index) as highest from session_status_indexes`))
    return highest.rows[0]?.highest ?? null
  }

  async readRevocations (afterSeq: number, since: Date, limit: number) {
    return this.run(() => this.statements.revocationsAfter.execute({ afterSeq, since: since.toISOString(), limit }))
  }

  async pruneRevocations (before: Date) {
    return this.run(async () => (await this.db.delete(revocations).where(lt(revocations.revokedAt, before))).rowCount ?? 0)
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

  async findIdentity (provider: string, subject: string) {
    return this.run(async () => (await this.db.select().from(identities).where(and(eq(identities.provider, provider), eq(identities.subject, subject))))[0])
  }

  async listIdentities (userId: number) {
    return this.run(async () => await this.db.select().from(identities).where(eq(identities.userId, userId)).orderBy(asc(identities.createdAt), asc(identities.provider)))
  }

  async createUserWithIdentity (user: NewUser, identity: Omit<NewIdentity, 'userId'>, now: Date) {
    return this.run(() => this.transaction(async (tx) => {
      const [created] = await tx.insert(users).values({ ...user, createdAt: now, updatedAt: now }).returning()
      const linked = ((await tx.insert(identities).values({ ...identity, userId: created.id, createdAt: now }).onConflictDoNothing()).rowCount ?? 0) > 0
      if (!linked) throw new IdentityTakenError()
      return created
    }))
  }

  async linkIdentity (identity: NewIdentity, now: Date) {
    return this.run(async () => ((await this.db.insert(identities).values({ ...identity, createdAt: now }).onConflictDoNothing()).rowCount ?? 0) > 0)
  }

  async unlinkIdentity (userId: number, provider: string): Promise<UnlinkOutcome> {
    return this.run(() => this.transaction(async (tx) => {
      // The user's row locked: two unlinks of one user (or a password change) judge one after the other.
      const [user] = await tx.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).for('update')
      const linked = await tx.select({ provider: identities.provider }).from(identities).where(eq(identities.userId, userId))
      if (!linked.some(identity => identity.provider === provider)) return 'not_found'
      // The ways to sign in that would be left: a password, the other identities, a passkey.
      const left = (user?.passwordHash == null ? 0 : 1) + linked.length - 1 + (await tx.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.userId, userId))).length
      if (left === 0) return 'last_login_method'
      await tx.delete(identities).where(and(eq(identities.userId, userId), eq(identities.provider, provider)))
      return 'unlinked'
    }))
  }

  async setPasswordHash (userId: number, passwordHash: string | null, now: Date) {
    return this.run(async () => ((await this.db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId))).rowCount ?? 0) > 0)
  }

  async proveAddress (proof: AddressProof, now: Date): Promise<AddressProofOutcome> {
    try {
      return await this.run(() => this.transaction(async (tx) => await proveAddressIn(tx, proof, now)))
    } catch (error) {
      if (error instanceof IdentityConflict) return { outcome: 'identity_conflict' }
      throw error
    }
  }

  async markEmailVerified (userId: number, email: string, now: Date) {
    return this.run(async () => ((await this.db.update(users)
      .set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now })
      .where(and(eq(users.id, userId), eq(users.email, email)))).rowCount ?? 0) > 0)
  }

  async createSession (session: NewSession, now: Date) {
    await this.run(() => this.db.insert(sessions).values({ ...session, createdAt: now, lastUsedAt: now, authenticatedAt: session.authenticatedAt ?? now }))
  }

  async startSession (session: NewSession, token: NewRefreshToken, now: Date) {
    await this.run(() => this.transaction(async (tx) => {
      await tx.insert(sessions).values({ ...session, createdAt: now, lastUsedAt: now, authenticatedAt: session.authenticatedAt ?? now })
      await tx.insert(refreshTokens).values({ ...token, createdAt: now })
    }))
  }

  async changePassword (userId: number, passwordHash: string, now: Date, keepSessionId: string) {
    return await this.run(() => this.transaction(async (tx) => {
      await tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, userId))
      await tx.execute(voidOneTimeTokens(userId, now))
      const ended = await revokeTokensWith(tx, sql`user_id = ${userId} and revoked_at is null and family_id <> ${keepSessionId}`, now, sql`,
      voided as (${voidMfaChallenges(userId, now)})`)
      await tx.update(sessions).set({ authenticatedAt: now }).where(eq(sessions.id, keepSessionId))
      return ended
    }))
  }

  async changeEmail (userId: number, changes: UserChanges, now: Date, notice: MailMessage) {
    return await this.run(() => this.transaction(async (tx) => {
      const [user] = await tx.update(users).set({ ...changes, updatedAt: now }).where(eq(users.id, userId)).returning()
      if (user === undefined) return { sessionsEnded: 0 }
      await tx.execute(voidOneTimeTokens(userId, now))
      await tx.insert(mailOutbox).values(outbox.outboxRow(notice, now))
      const sessionsEnded = await revokeTokensWith(tx, sql`user_id = ${userId} and revoked_at is null`, now, sql`,
      voided as (${voidMfaChallenges(userId, now)})`)
      return { user, sessionsEnded }
    }))
  }

  async markSessionAuthenticated (id: string, now: Date) {
    await this.run(() => this.db.update(sessions).set({ authenticatedAt: now }).where(eq(sessions.id, id)))
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

  async issueOneTimeToken (token: NewOneTimeToken, now: Date, { liveLimit, quotas = [], mail }: { liveLimit: number, quotas?: OneTimeTokenQuota[], mail?: MailMessage }) {
    const sameKind = and(eq(oneTimeTokens.userId, token.userId), eq(oneTimeTokens.purpose, token.purpose), isNull(oneTimeTokens.usedAt))
    return this.run(() => this.transaction(async (tx) => {
      // The user's row lock serialises two requests issuing at once (as SQLite's write lock does), so
      // quotas hold and at most liveLimit tokens stay unused. (NO KEY UPDATE: the insert's foreign-key check does not wait on it.)
      await tx.select({ id: users.id }).from(users).where(eq(users.id, token.userId)).for('no key update')
      for (const { since, max } of quotas) {
        const [{ issued }] = await tx.select({ issued: count() }).from(oneTimeTokens)
          .where(and(eq(oneTimeTokens.userId, token.userId), eq(oneTimeTokens.purpose, token.purpose), gte(oneTimeTokens.createdAt, since)))
        if (issued >= max) return false
      }
      await tx.insert(oneTimeTokens).values({ ...token, createdAt: now })
      const newest = tx.select({ tokenHash: oneTimeTokens.tokenHash }).from(oneTimeTokens)
        .where(sameKind).orderBy(desc(oneTimeTokens.createdAt), desc(oneTimeTokens.tokenHash)).limit(liveLimit)
      await tx.update(oneTimeTokens).set({ usedAt: now }).where(and(sameKind, notInArray(oneTimeTokens.tokenHash, newest)))
      if (mail !== undefined) await tx.insert(mailOutbox).values(outbox.outboxRow(mail, now))
      return true
    }))
  }

  async findOneTimeToken (tokenHash: string): Promise<OneTimeTokenRecord | undefined> {
    return this.run(async () => (await this.db.select().from(oneTimeTokens).where(eq(oneTimeTokens.tokenHash, tokenHash)))[0])
  }

  async useOneTimeToken (tokenHash: string, now: Date) {
    // The row lock of the conditional update: of two concurrent uses, the second finds used_at set.
    return this.run(() => this.transaction(async (tx) => {
      const [used] = await tx.update(oneTimeTokens).set({ usedAt: now })
        .where(and(eq(oneTimeTokens.tokenHash, tokenHash), isNull(oneTimeTokens.usedAt)))
        .returning({ userId: oneTimeTokens.userId, purpose: oneTimeTokens.purpose })
      if (used === undefined) return false
      await tx.update(oneTimeTokens).set({ usedAt: now })
        .where(and(eq(oneTimeTokens.userId, used.userId), eq(oneTimeTokens.purpose, used.purpose), isNull(oneTimeTokens.usedAt)))
      return true
    }))
  }

  async voidOneTimeTokens (userId: number, now: Date) {
    await this.run(() => this.db.execute(voidOneTimeTokens(userId, now)))
  }

  async recordSecurityEvent (event: NewSecurityEvent) {
    await this.run(() => this.db.insert(securityEvents).values({ ...event, detail: encodeDetail(event.detail) }))
  }

  async listSecurityEvents (userId: number, page: { limit: number, beforeId?: number }) {
    const rows = await this.run(() => this.db.select().from(securityEvents)
      .where(and(eq(securityEvents.userId, userId), page.beforeId === undefined ? undefined : lt(securityEvents.id, page.beforeId)))
      .orderBy(desc(securityEvents.id))
      .limit(page.limit))
    return rows.map(decodeSecurityEvent)
  }

  async pruneSecurityEvents (olderThan: Date, limit: number) {
    const prunable = this.db.select({ id: securityEvents.id }).from(securityEvents)
      .where(lt(securityEvents.createdAt, olderThan)).limit(limit).for('update', { skipLocked: true })
    return this.run(() => this.transaction(async (tx) => (await tx.delete(securityEvents).where(inArray(securityEvents.id, prunable))).rowCount ?? 0))
  }

  async enqueueMail (mail: MailMessage, now: Date) {
    await this.run(() => this.db.insert(mailOutbox).values(outbox.outboxRow(mail, now)))
  }

  async claimMails (now: Date, claimedUntil: Date, limit: number) {
    return this.run(() => outbox.claimMails(this.db, now, claimedUntil, limit))
  }

  async markMailSent (id: number, now: Date) {
    await this.run(() => outbox.markMailSent(this.db, id, now))
  }

  async retryMail (id: number, retryAt: Date, error: string) {
    await this.run(() => outbox.retryMail(this.db, id, retryAt, error))
  }

  async markMailFailed (id: number, now: Date, error: string) {
    await this.run(() => outbox.markMailFailed(this.db, id, now, error))
  }

  async countPendingMails () {
    return this.run(() => outbox.countPendingMails(this.db))
  }

  async pruneMails (finishedBefore: Date, limit: number) {
    return this.run(() => outbox.pruneMails(this.db, finishedBefore, limit))
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

  async replaceSigningKeyPrivateHalf (kid: string, expected: string, replacement: string | null) {
    const result = await this.run(() => this.db.update(signingKeys).set({ privateKeyPem: replacement })
      .where(and(eq(signingKeys.kid, kid), eq(signingKeys.privateKeyPem, expected))))
    return result.rowCount === 1
  }

  async createPasskey (passkey: NewPasskey, now: Date) {
    return this.run(async () => ((await this.db.insert(passkeys).values(passkeyRow(passkey, now)).onConflictDoNothing()).rowCount ?? 0) > 0)
  }

  async listPasskeys (userId: number) {
    const rows = await this.run(() => this.db.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(asc(passkeys.createdAt), asc(passkeys.id)))
    return rows.map(toPasskey)
  }

  async findPasskeyByCredentialId (credentialId: string) {
    const [row] = await this.run(() => this.db.select().from(passkeys).where(eq(passkeys.credentialId, credentialId)))
    return row === undefined ? undefined : toPasskey(row)
  }

  async renamePasskey (userId: number, id: string, name: string) {
    const [row] = await this.run(() => this.db.update(passkeys).set({ name }).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId))).returning())
    return row === undefined ? undefined : toPasskey(row)
  }

  async deletePasskey (userId: number, id: string) {
    return this.run(async () => ((await this.db.delete(passkeys).where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))).rowCount ?? 0) > 0)
  }

  async recordPasskeyUse (id: string, counter: number, now: Date) {
    // One conditional statement (the row lock orders racing logins): a counter that did not grow writes nothing.
    const growing = counter === 0 ? eq(passkeys.counter, 0) : lt(passkeys.counter, counter)
    return this.run(async () => ((await this.db.update(passkeys).set({ counter, lastUsedAt: now })
      .where(and(eq(passkeys.id, id), growing))).rowCount ?? 0) > 0)
  }

  async createWebauthnChallenge (challenge: NewWebauthnChallenge, now: Date) {
    await this.run(async () => {
      // Expired ones go first: the table holds only minutes of challenges, whoever asks for them.
      await this.db.delete(webauthnChallenges).where(lte(webauthnChallenges.expiresAt, now))
      await this.db.insert(webauthnChallenges).values({ ...challenge, createdAt: now })
    })
  }

  async consumeWebauthnChallenge (challengeHash: string, purpose: WebauthnChallengePurpose, now: Date, userId?: number) {
    const owner = userId === undefined ? undefined : eq(webauthnChallenges.userId, userId)
    // DELETE … RETURNING: of two requests with one challenge, only one gets the row.
    const [used] = await this.run(() => this.db.delete(webauthnChallenges)
      .where(and(eq(webauthnChallenges.challengeHash, challengeHash), eq(webauthnChallenges.purpose, purpose), owner))
      .returning({ expiresAt: webauthnChallenges.expiresAt }))
    return used !== undefined && used.expiresAt > now
  }

  async saveTotpSecret (userId: number, secret: string, now: Date) {
    // A confirmed secret is never replaced here: turning TOTP off (deleteTotp) comes first.
    const result = await this.run(() => this.db.insert(totpCredentials).values({ userId, secret, createdAt: now })
      .onConflictDoUpdate({ target: totpCredentials.userId, set: { secret, createdAt: now, lastUsedStep: null }, setWhere: isNull(totpCredentials.confirmedAt) }))
    return (result.rowCount ?? 0) > 0
  }

  async findTotp (userId: number) {
    return this.run(async () => (await this.db.select().from(totpCredentials).where(eq(totpCredentials.userId, userId)))[0])
  }

  async confirmTotp (userId: number, step: number, recoveryCodeHashes: string[], now: Date) {
    return this.run(() => this.transaction(async (tx) => {
      // The conditional update locks the row: of two confirmations at once, the second finds it confirmed.
      const confirmed = await tx.update(totpCredentials).set({ confirmedAt: now, lastUsedStep: step })
        .where(and(eq(totpCredentials.userId, userId), isNull(totpCredentials.confirmedAt)))
        .returning({ userId: totpCredentials.userId })
      if (confirmed.length === 0) return false
      await writeRecoveryCodes(tx, userId, recoveryCodeHashes, now)
      return true
    }))
  }

  async deleteTotp (userId: number) {
    return this.run(() => this.transaction(async (tx) => {
      await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
      await tx.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId))
      return ((await tx.delete(totpCredentials).where(eq(totpCredentials.userId, userId))).rowCount ?? 0) > 0
    }))
  }

  async replaceRecoveryCodes (userId: number, codeHashes: string[], now: Date) {
    return this.run(() => this.transaction(async (tx) => {
      // The TOTP row's lock serialises this with a deletion (and with another replacement).
      const [enabled] = await tx.select({ userId: totpCredentials.userId }).from(totpCredentials)
        .where(and(eq(totpCredentials.userId, userId), isNotNull(totpCredentials.confirmedAt))).for('update')
      if (enabled === undefined) return false
      await writeRecoveryCodes(tx, userId, codeHashes, now)
      return true
    }))
  }

  async countRecoveryCodes (userId: number) {
    const [{ left }] = await this.run(() => this.db.select({ left: count() }).from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt))))
    return left
  }

  async createMfaChallenge (challenge: NewMfaChallenge, now: Date, maxFailures: number) {
    await this.run(() => this.transaction(async (tx) => {
      await tx.delete(mfaChallenges).where(and(
        eq(mfaChallenges.userId, challenge.userId),
        or(isNotNull(mfaChallenges.usedAt), lte(mfaChallenges.expiresAt, now), gte(mfaChallenges.failures, maxFailures))
      ))
      await tx.insert(mfaChallenges).values({ ...challenge, createdAt: now })
    }))
  }

  async findMfaChallenge (tokenHash: string) {
    return this.run(async () => (await this.db.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)))[0])
  }

  async voidMfaChallenges (userId: number, now: Date) {
    await this.run(() => this.db.execute(voidMfaChallenges(userId, now)))
  }

  async attemptMfaChallenge (tokenHash: string, proof: MfaProof | null, now: Date, maxFailures: number, cap: MfaWrongCodeCap): Promise<MfaAttempt> {
    return this.run(() => this.transaction(async (tx): Promise<MfaAttempt> => {
      // FOR UPDATE: attempts with one challenge wait for each other and each sees the one before it.
      const [challenge] = await tx.select().from(mfaChallenges).where(eq(mfaChallenges.tokenHash, tokenHash)).for('update')
      if (challenge === undefined || challenge.usedAt !== null || challenge.expiresAt <= now || challenge.failures >= maxFailures) return { outcome: 'invalid' }
      const { userId } = challenge
      const ofUser = eq(totpCredentials.userId, userId)
      // The TOTP row's lock (after the challenge's, the order every writer of both takes): attempts of the
      // account's other mfa_tokens wait too, so parallel wrong codes never count past the cap.
      const [totp] = await tx.select({ failedCodes: totpCredentials.failedCodes }).from(totpCredentials).where(ofUser).for('update')
      if (totp !== undefined && totp.failedCodes >= cap.maxWrongCodes) return { outcome: 'locked', userId }
      if (proof !== null && await consumeProof(tx, userId, proof, now)) {
        await tx.update(mfaChallenges).set({ usedAt: now }).where(eq(mfaChallenges.tokenHash, tokenHash))
        await tx.update(totpCredentials).set({ failedCodes: 0 }).where(ofUser)
        return { outcome: 'passed', userId }
      }
      await tx.update(mfaChallenges).set({ failures: sql`${mfaChallenges.failures} + 1` }).where(eq(mfaChallenges.tokenHash, tokenHash))
      const refused = { outcome: 'refused' as const, userId, failures: challenge.failures + 1 }
      if (totp === undefined) return refused
      await tx.update(totpCredentials).set({ failedCodes: sql`${totpCredentials.failedCodes} + 1` }).where(ofUser)
      if (totp.failedCodes + 1 < cap.maxWrongCodes) return refused
      if (cap.lockedMail !== undefined) await tx.insert(mailOutbox).values(outbox.outboxRow(cap.lockedMail, now))
      return { ...refused, lockedNow: true }
    }))
  }

  async forgiveMfaFailures (userId: number, keepAtMost: number) {
    await this.run(() => this.db.update(totpCredentials).set({ failedCodes: sql`least(${totpCredentials.failedCodes}, ${keepAtMost})` })
      .where(eq(totpCredentials.userId, userId)))
  }

  async readSetting (name: string) {
    return await this.run(async () => (await this.db.select({ value: settings.value }).from(settings).where(eq(settings.name, name)))[0]?.value)
  }

  async writeSetting (name: string, value: string, options: { onlyIfNone?: boolean } = {}) {
    await this.run(async () => {
      const insert = this.db.insert(settings).values({ name, value })
      if (options.onlyIfNone === true) await insert.onConflictDoNothing()
      else await insert.onConflictDoUpdate({ target: settings.name, set: { value } })
    })
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

function passkeyRow (passkey: NewPasskey, now: Date) {
  return { ...passkey, transports: passkey.transports.join(','), createdAt: now }
}

function toPasskey (row: typeof passkeys.$inferSelect): PasskeyRecord {
  return { ...row, transports: row.transports === '' ? [] : row.transports.split(',') }
}

import Database from 'better-sqlite3'
import { and, asc, desc, eq, exists, gt, gte, isNotNull, isNull, lt, max, notExists, or, sql, type SQL } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { liveTokenOf } from '../live-sessions.js'
import { refreshTokenRead, refreshTokenReadColumns } from '../refresh-token-read.js'
import { DuplicateValueError, DuplicateSlugError, StoreUnavailableError, type AddressProof, type MfaProof, type NewPasskey, type PasskeyRecord, type Rotation, type RotatedToken } from '../store.js'
import { identities, memberships, mfaChallenges, organizations, oneTimeTokens, recoveryCodes, refreshTokens, revocations, securityEvents, sessions, sessionStatusIndexes, totpCredentials, users, passkeys } from './schema.js'

/** Pruning leaves a session row without tokens alone this long: its login may be between its two inserts. */
export const SESSION_ROW_GRACE_MS = 60_000

// SQLite result codes that mean "not now" rather than "never": the request gets 503 and may be retried.
export const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN|PROTOCOL|NOMEM)/

export type Db = ReturnType<typeof drizzle>

/** A model as the prepared reads return it: times in milliseconds (db/sqlite/oauth.ts makes them Dates). */
export interface StoredOAuthModel { id: string, payload: string, expiresAt: number | null, consumedAt: number | null }

// oidc-provider's reads (four in a code exchange: the code, the provider Session, its binding, the grant) are SQL as written, as its
// writes are: Drizzle's placeholder filling and row mapping doubled a read's time (20 µs against 9 here, issue 34).
const OAUTH_MODEL_READ = 'select id, payload, expires_at as expiresAt, consumed_at as consumedAt from oauth_models'
/** Not expired at @now: a null expiry never expires. */
const UNEXPIRED_AT_NOW = '(expires_at is null or expires_at > @now)'

/** An OAuth model's row as the prepared writes take it (db/oauth-model-rows.ts oauthModelColumns; times in milliseconds). */
export interface OAuthModelRow {
  kind: string
  id: string
  payload: string
  grantId: string | null
  userCode: string | null
  uid: string | null
  accountId: string | null
  expiresAt: number | null
}

/** When a refresh token's session began (its login), in milliseconds: the token's own creation where the session row is gone. */
function sessionStartOf (tokens: typeof refreshTokens) {
  return sql<number>`coalesce((select ${sessions.createdAt} from ${sessions} where ${sessions.id} = ${tokens.familyId}), ${tokens.createdAt})`
}

/** The tables a refresh token's read joins (db/refresh-token-read.ts). */
const readTables = { refreshTokens, users, sessions, sessionStatusIndexes, memberships, organizations }

// The queries of the request paths, compiled once per connection. (A partial update's SQL depends on
// which fields it sets, so updateUser is built per call.)
export function prepareStatements (db: Db) {
  const placeholder = sql.placeholder
  return {
    // oidc-provider's models by kind and id (db/sqlite/oauth.ts): clients, grants, refresh tokens on every token request.
    oauthModelById: db.$client.prepare<{ kind: string, id: string, now: number }, StoredOAuthModel>(`${OAUTH_MODEL_READ} where kind = @kind and id = @id and ${UNEXPIRED_AT_NOW}`),
    // oidc-provider's writes (db/sqlite/oauth.ts): a client-credentials token claims a status row, a code
    // exchange consumes its code and writes its grant and tokens. Compiled once (issue 34: a Drizzle build
    // and an SQLite compile per write were a quarter of a client-credentials grant's event-loop time).
    // SQL as written: a Drizzle placeholder of a timestamp column maps its value as a Date, which null is not.
    upsertOAuthModel: db.$client.prepare<OAuthModelRow>(`insert into oauth_models (kind, id, payload, grant_id, user_code, uid, account_id, expires_at)
      values (@kind, @id, @payload, @grantId, @userCode, @uid, @accountId, @expiresAt)
      on conflict (kind, id) do update set payload = excluded.payload, grant_id = excluded.grant_id, user_code = excluded.user_code,
        uid = excluded.uid, account_id = excluded.account_id, expires_at = excluded.expires_at`),
    // A row taken only where none is, or where the one there has expired (its consumption cleared).
    claimOAuthModel: db.$client.prepare<OAuthModelRow & { now: number }>(`insert into oauth_models (kind, id, payload, grant_id, user_code, uid, account_id, expires_at)
      values (@kind, @id, @payload, @grantId, @userCode, @uid, @accountId, @expiresAt)
      on conflict (kind, id) do update set payload = excluded.payload, grant_id = excluded.grant_id, user_code = excluded.user_code,
        uid = excluded.uid, account_id = excluded.account_id, expires_at = excluded.expires_at, consumed_at = null
        where oauth_models.expires_at <= @now`),
    consumeOAuthModel: db.$client.prepare<{ kind: string, id: string, now: number }>('update oauth_models set consumed_at = @now where kind = @kind and id = @id and consumed_at is null'),
    destroyOAuthModel: db.$client.prepare<{ kind: string, id: string }>('delete from oauth_models where kind = @kind and id = @id'),
    // A provider Session by its uid (every authorization and code exchange), a device code by its user code.
    oauthModelByUid: db.$client.prepare<{ kind: string, uid: string, now: number }, StoredOAuthModel>(`${OAUTH_MODEL_READ} where kind = @kind and uid = @uid and ${UNEXPIRED_AT_NOW} limit 1`),
    oauthModelByUserCode: db.$client.prepare<{ kind: string, userCode: string, now: number }, StoredOAuthModel>(`${OAUTH_MODEL_READ} where kind = @kind and user_code = @userCode and ${UNEXPIRED_AT_NOW} limit 1`),
    // A user's sessions with a live refresh token, newest first: GET /auth/sessions, and the provider Session's
    // check that its service session still holds (core/oauth/provider-sessions.ts, every code exchange).
    liveSessionsOfUser: db.select().from(sessions)
      .where(and(eq(sessions.userId, placeholder('userId')), exists(db.select({ one: sql`1` }).from(refreshTokens)
        .where(liveTokenOf(refreshTokens, sessions.id, sql`${placeholder('now')}`)))))
      .orderBy(desc(sessions.createdAt)).prepare(),
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
    // An imported user (UsersStore.importUsers): a taken email or username inserts nothing and returns no row.
    importUser: db.insert(users).values({
      firstName: placeholder('firstName'),
      lastName: placeholder('lastName'),
      username: placeholder('username'),
      email: placeholder('email'),
      passwordHash: placeholder('passwordHash'),
      emailVerified: placeholder('emailVerified'),
      // Milliseconds or null, as stored: a placeholder of the column itself maps its value as a Date, which null is not.
      emailVerifiedAt: sql`${placeholder('emailVerifiedAtMs')}`,
      createdAt: placeholder('now'),
      updatedAt: placeholder('now')
    }).onConflictDoNothing().returning({ id: users.id }).prepare(),
    insertRefreshToken: db.insert(refreshTokens).values({
      tokenHash: placeholder('tokenHash'),
      userId: placeholder('userId'),
      familyId: placeholder('familyId'),
      expiresAt: placeholder('expiresAt'),
      createdAt: placeholder('now')
    }).prepare(),
    // A refresh token with its session's login time, status-list index, user's state and active membership (db/refresh-token-read.ts).
    refreshTokenByHash: refreshTokenRead(db.select(refreshTokenReadColumns(readTables)).from(refreshTokens).$dynamic(), readTables, placeholder('tokenHash'))
      .prepare(),
    // A rotation's claim on the presented token, and what the refresh needs of it, in one statement:
    // only a live token (not rotated, revoked or expired) of a session within SESSION_MAX_AGE and a
    // user not disabled (and the expected one, when given) is marked. Its successor's insert follows
    // in the same savepoint (db/sqlite/sessions.ts): SQLite allows no insert inside an update.
    rotateRefreshToken: db.update(refreshTokens)
      .set({ rotatedAt: sql`${placeholder('now')}`, replacedBy: sql`${placeholder('successorHash')}` })
      .where(and(
        eq(refreshTokens.tokenHash, placeholder('previousHash')),
        isNull(refreshTokens.rotatedAt),
        isNull(refreshTokens.revokedAt),
        gt(refreshTokens.expiresAt, sql`${placeholder('now')}`),
        sql`(${placeholder('expectedUserId')} is null or ${refreshTokens.userId} = ${placeholder('expectedUserId')})`,
        notExists(db.select({ one: sql`1` }).from(users).where(and(eq(users.id, refreshTokens.userId), isNotNull(users.disabledAt)))),
        gt(sessionStartOf(refreshTokens), sql`${placeholder('oldestSessionStart')}`)
      ))
      .returning({
        userId: refreshTokens.userId,
        familyId: refreshTokens.familyId,
        sessionStartedAt: sessionStartOf(refreshTokens).mapWith(Number),
        statusIndex: sql<number | null>`(select ${sessionStatusIndexes.statusIndex} from ${sessionStatusIndexes} where ${sessionStatusIndexes.sessionId} = ${refreshTokens.familyId})`,
        activeOrgId: sql<number | null>`(select ${sessions.activeOrgId} from ${sessions} where ${sessions.id} = ${refreshTokens.familyId})`,
        // The active organisation's membership as it stands, read in the claim (no read of its own): slug and role as one text.
        // (Aliased and qualified by hand: in a RETURNING clause drizzle writes columns without their table.)
        activeMembership: sql<string | null>`(select o.slug || ' ' || m.role from sessions s
          join memberships m on m.org_id = s.active_org_id and m.user_id = refresh_tokens.user_id
          join organizations o on o.id = m.org_id
          where s.id = refresh_tokens.family_id)`
      })
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
      authenticatedAt: placeholder('authenticatedAt'),
      amr: placeholder('amr')
    }).prepare(),
    // A login's session: the user's last login, in the session's transaction.
    markLogin: db.update(users).set({ lastLoginAt: sql`${placeholder('now')}` }).where(eq(users.id, placeholder('id'))).prepare(),
    touchSession: db.update(sessions).set({ lastUsedAt: sql`${placeholder('now')}` }).where(eq(sessions.id, placeholder('id'))).prepare(),
    // Run on every authenticated request (revocation is immediate): the family index, stopping at the first
    // token that keeps the session live (a family gathers a row per rotation until pruning, so no aggregate).
    liveFamilyToken: db.select({ one: sql<number>`1` }).from(refreshTokens)
      .where(liveTokenOf(refreshTokens, placeholder('familyId'), sql`${placeholder('now')}`))
      .limit(1).prepare(),
    anyFamilyToken: db.select({ one: sql<number>`1` }).from(refreshTokens).where(eq(refreshTokens.familyId, placeholder('familyId'))).limit(1).prepare(),
    // Polled by every instance a few times a second: a range of the primary key. A user-change row (no
    // session) is read whatever its time: the database stamps it (migration 0014), not the app's clock.
    revocationsAfter: db.select().from(revocations)
      .where(and(gt(revocations.seq, placeholder('afterSeq')), or(gte(revocations.revokedAt, sql`${placeholder('since')}`), isNull(revocations.sessionId))))
      .orderBy(asc(revocations.seq)).limit(placeholder('limit')).prepare(),
    highestStatusIndex: db.select({ highest: max(sessionStatusIndexes.statusIndex) }).from(sessionStatusIndexes).prepare(),
    // Every login reads the user's TOTP, claims a status index and writes an event: built and compiled
    // once, not per login (their drizzle builds and SQLite compiles took a quarter of a login's event-loop
    // time, issue 23).
    totpByUser: db.select().from(totpCredentials).where(eq(totpCredentials.userId, placeholder('userId'))).prepare(),
    // An index that a revoked session's bit still sets (a revocations row) is not taken. SQL as written:
    // drizzle builds no INSERT … SELECT without a FROM.
    claimStatusIndex: db.$client.prepare<{ statusIndex: number, sessionId: string }>(`insert into session_status_indexes (status_index, session_id)
      select @statusIndex, @sessionId where not exists (select 1 from revocations where status_index = @statusIndex)
      on conflict (status_index) do nothing`),
    insertSecurityEvent: db.insert(securityEvents).values({
      type: placeholder('type'),
      userId: placeholder('userId'),
      sessionId: placeholder('sessionId'),
      ip: placeholder('ip'),
      userAgent: placeholder('userAgent'),
      requestId: placeholder('requestId'),
      detail: placeholder('detail'),
      createdAt: placeholder('createdAt'),
      actorId: placeholder('actorId')
    }).prepare()
  }
}

export interface PendingRotation {
  rotation: Rotation
  resolve: (rotated: RotatedToken | undefined) => void
  reject: (error: unknown) => void
}

export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/**
 * Writes a revocation-log row for each session that has a refresh token matching `tokens` (call it
 * before revoking them, in the same transaction). Returns how many sessions it logged.
 */
export function logRevocations (tx: Tx, tokens: SQL | undefined, now: Date, userDeleted: boolean): number {
  return tx.run(sql`insert into revocations (session_id, user_id, status_index, user_deleted, revoked_at)
    select t.family_id, t.user_id, s.status_index, ${userDeleted ? 1 : 0}, ${now.getTime()}
    from (select ${refreshTokens.familyId} as family_id, min(${refreshTokens.userId}) as user_id from ${refreshTokens}
      where ${tokens} group by ${refreshTokens.familyId}) t
    left join session_status_indexes s on s.session_id = t.family_id`).changes
}

/** Marks the user's unused mailed one-time tokens used. */
export function voidOneTimeTokens (tx: Tx | Db, userId: number, now: Date): void {
  tx.update(oneTimeTokens).set({ usedAt: now }).where(and(eq(oneTimeTokens.userId, userId), isNull(oneTimeTokens.usedAt))).run()
}

/** Revokes the live refresh tokens matching `live`, with a revocation-log row per session; returns how many sessions. */
export function revokeTokens (tx: Tx, live: SQL | undefined, now: Date): number {
  // One log row per session: their count is the number of sessions revoked.
  const sessions = logRevocations(tx, live, now, false)
  tx.update(refreshTokens).set({ revokedAt: now }).where(live).run()
  return sessions
}

/** Thrown inside proveAddress's transaction to roll it back. */
export class IdentityConflict extends Error {}

/** Whether the identity is another user's, or the user has another one at its provider. */
export function identityConflicts (tx: Tx, userId: number, identity: AddressProof['identity'] & object): boolean {
  const atProvider = tx.select({ userId: identities.userId, subject: identities.subject }).from(identities)
    .where(and(eq(identities.provider, identity.provider), or(eq(identities.subject, identity.subject), eq(identities.userId, userId)))).all()
  return atProvider.some(row => row.userId !== userId || row.subject !== identity.subject)
}

/** Marks the user's unused MFA challenges used: their mfa_tokens verify nothing any more. */
export function voidMfaChallenges (tx: Tx | Db, userId: number, now: Date): void {
  tx.update(mfaChallenges).set({ usedAt: now }).where(and(eq(mfaChallenges.userId, userId), isNull(mfaChallenges.usedAt))).run()
}

/** Uses a TOTP step (newer than the last used, of a confirmed secret) or an unused recovery code; false when it cannot. */
export function consumeProof (tx: Tx, userId: number, proof: MfaProof, now: Date): boolean {
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
export function firstRow<T> (rows: T[]): T {
  if (rows.length === 0) throw new Error('INSERT … RETURNING gave no row')
  return rows[0]
}

export function passkeyRow (passkey: NewPasskey, now: Date) {
  return { ...passkey, transports: passkey.transports.join(','), createdAt: now }
}

export function toPasskey (row: typeof passkeys.$inferSelect): PasskeyRecord {
  return { ...row, transports: row.transports === '' ? [] : row.transports.split(',') }
}

/** The WebAuthn rule: a counter must grow, unless the authenticator keeps none (0 stored, 0 presented). */
export function counterGrows (stored: typeof passkeys.counter, presented: number): SQL | undefined {
  return presented === 0 ? eq(stored, 0) : lt(stored, presented)
}

export function translateSqliteError (error: unknown): unknown {
  const sqliteError = findSqliteError(error)
  if (sqliteError === undefined) return error
  if (sqliteError.code === 'SQLITE_CONSTRAINT_UNIQUE') {
    if (sqliteError.message.includes('users.email')) return new DuplicateValueError('email')
    if (sqliteError.message.includes('users_username_lower_unique')) return new DuplicateValueError('username')
    if (sqliteError.message.includes('organizations.slug')) return new DuplicateSlugError()
  }
  if (UNAVAILABLE_CODES.test(sqliteError.code)) return new StoreUnavailableError({ cause: error })
  return error
}

// Drizzle wraps the driver's error in DrizzleQueryError; the SqliteError is on the cause chain.
export function findSqliteError (error: unknown): InstanceType<typeof Database.SqliteError> | undefined {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof Database.SqliteError) return current
  }
  return undefined
}

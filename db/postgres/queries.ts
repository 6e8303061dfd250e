import { and, asc, count, eq, gt, gte, isNotNull, isNull, lt, ne, or, sql, type SQL } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import type { AddressProof, AddressProofOutcome, ClaimedSetup, MfaProof, NewPasskey, PasskeyRecord } from '../store.js'
import { tokenStands } from '../live-sessions.js'
import { refreshTokenRead, refreshTokenReadColumns } from '../refresh-token-read.js'
import { identities, mfaChallenges, oneTimeTokens, recoveryCodes, refreshTokens, revocations, sessions, sessionStatusIndexes, totpCredentials, users, passkeys, webauthnChallenges, memberships, organizations } from './schema.js'

/** Pruning leaves a session row without tokens alone this long: its login may be between its two inserts. */
export const SESSION_ROW_GRACE_MS = 60_000

export type Db = ReturnType<typeof drizzle>
export type Transaction = Parameters<Parameters<Db['transaction']>[0]>[0]

/** The tables a refresh token's read joins (db/refresh-token-read.ts). */
const readTables = { refreshTokens, users, sessions, sessionStatusIndexes, memberships, organizations }

// The query of every authenticated request, as a named prepared statement: each pooled connection
// parses and plans it once.
export function prepareStatements (db: Db) {
  const placeholder = sql.placeholder
  return {
    // Immediate revocation: one lookup on refresh_tokens_family_idx.
    familyTokenState: db.select({
      tokens: count(),
      live: sql<number>`count(*) filter (where ${tokenStands(refreshTokens, sql`${placeholder('now')}`)})`.mapWith(Number)
    }).from(refreshTokens).where(eq(refreshTokens.familyId, placeholder('familyId'))).prepare('family_token_state'),
    // Polled by every instance a few times a second: a range of the primary key. A user-change row (no
    // session) is read whatever its time: the database stamps it (migration 0014), not the app's clock.
    revocationsAfter: db.select().from(revocations)
      .where(and(gt(revocations.seq, placeholder('afterSeq')), or(gte(revocations.revokedAt, sql`${placeholder('since')}`), isNull(revocations.sessionId))))
      .orderBy(asc(revocations.seq)).limit(placeholder('limit')).prepare('revocations_after'),
    // A refresh token with its session's login time, status-list index, user's state and active membership (db/refresh-token-read.ts).
    refreshTokenByHash: refreshTokenRead(db.select(refreshTokenReadColumns(readTables)).from(refreshTokens).$dynamic(), readTables, placeholder('tokenHash'))
      .prepare('refresh_token_by_hash')
  }
}

/**
 * An INSERT of a revocation-log row per session among the refresh tokens of `source` (the table by
 * default, or a CTE) matching `where`, for use inside a WITH; returns the rows it wrote.
 */
export function logRevocations (where: SQL, now: Date, userDeleted: boolean, source: SQL = sql`refresh_tokens`): SQL {
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
export async function revokeTokensWith (db: Db | Transaction, tokens: SQL, now: Date, alsoWith: SQL = sql``): Promise<number> {
  const result = await db.execute<{ sessions: number }>(sql`
    with revoked as (update refresh_tokens set revoked_at = ${now} where ${tokens} returning family_id, user_id),
    logged as (${logRevocations(sql`true`, now, false, sql`revoked`)})${alsoWith}
    select count(*)::int as sessions from logged`)
  return result.rows[0].sessions
}

/** Thrown inside proveAddress's transaction to roll it back. */
export class IdentityConflict extends Error {}

/** Whether the identity is another user's, or the user has another one at its provider. */
export async function identityConflicts (tx: Transaction, userId: number, identity: AddressProof['identity'] & object): Promise<boolean> {
  const atProvider = await tx.select({ userId: identities.userId, subject: identities.subject }).from(identities)
    .where(and(eq(identities.provider, identity.provider), or(eq(identities.subject, identity.subject), eq(identities.userId, userId))))
  return atProvider.some(row => row.userId !== userId || row.subject !== identity.subject)
}

/** The UPDATE that marks the user's unused mailed one-time tokens used. */
export function voidOneTimeTokens (userId: number, now: Date): SQL {
  return sql`update one_time_tokens set used_at = ${now} where user_id = ${userId} and used_at is null`
}

/** The UPDATE that marks the user's unused MFA challenges used (their mfa_tokens verify nothing any more); a statement of its own or a WITH clause. */
export function voidMfaChallenges (userId: number, now: Date): SQL {
  return sql`update mfa_challenges set used_at = ${now} where user_id = ${userId} and used_at is null`
}

/** The user's recovery codes become `codeHashes`, all unused (inside a transaction). */
export async function writeRecoveryCodes (tx: Transaction, userId: number, codeHashes: string[], now: Date): Promise<void> {
  await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
  if (codeHashes.length > 0) await tx.insert(recoveryCodes).values(codeHashes.map(codeHash => ({ userId, codeHash, createdAt: now })))
}

/**
 * Uses a TOTP step (newer than the last used, of a confirmed secret) or an unused recovery code;
 * false when it cannot. The conditional update takes the row's lock: of two transactions using one
 * code at once, the second waits, then finds the condition false (READ COMMITTED re-reads the row).
 */
export async function consumeProof (tx: Transaction, userId: number, proof: MfaProof, now: Date): Promise<boolean> {
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
export async function proveAddressIn (tx: Transaction, { userId, email, passwordHash, identity, clearsPassword = false, keepSessionId }: AddressProof, now: Date): Promise<AddressProofOutcome> {
  // The user's row locked: proofs, unlinks and password changes of this user judge one after the other.
  const [user] = await tx.select({ email: users.email, emailVerified: users.emailVerified, passwordHash: users.passwordHash }).from(users)
    .where(eq(users.id, userId)).for('update')
  // Before any write: an identity that cannot be linked leaves the account as it was.
  if (identity !== undefined && await identityConflicts(tx, userId, identity)) return { outcome: 'identity_conflict' }
  let sessionsEnded = 0
  const endAccess = async () => {
    await tx.update(oneTimeTokens).set({ usedAt: now }).where(and(eq(oneTimeTokens.userId, userId), isNull(oneTimeTokens.usedAt)))
    // The sessions end, and with them every pending second step (mfa_token), as revokeUserSessions does.
    const kept = keepSessionId === undefined ? sql`` : sql` and family_id <> ${keepSessionId}`
    sessionsEnded += await revokeTokensWith(tx, sql`user_id = ${userId} and revoked_at is null${kept}`, now, sql`,
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
    // A provider sign-in and a mailed code clear the password; a reset replaced it above; the verification link keeps the registrant's.
    const passwordCleared = identity !== undefined || (clearsPassword && user.passwordHash !== null)
    if (identity !== undefined || clearsPassword) await tx.update(users).set({ passwordHash: null }).where(eq(users.id, userId))
    const removed = passkeysRemoved.length > 0 || totp || identitiesRemoved.length > 0
    // The sessions that set it all up end (and with them their access tokens, through the log); after a mailed
    // code whatever it removed: the sessions are the registrant's, and the owner signs in anew.
    if (passwordHash === undefined && (passwordCleared || removed || clearsPassword)) await endAccess()
    claimed = { passwordCleared, passkeys: passkeysRemoved, totp, identities: identitiesRemoved }
    await tx.update(users).set({ emailVerified: true, emailVerifiedAt: now, updatedAt: now }).where(eq(users.id, userId))
  } else if (identity !== undefined && user.passwordHash !== null) {
    // A verified account with a password: the one signing in proved the address, not the password, whose author
    // may be a squatter whose registration the owner verified. The ways in it never showed go; so does every session.
    const passkeysRemoved = await tx.delete(passkeys).where(eq(passkeys.userId, userId)).returning({ id: passkeys.id, name: passkeys.name })
    await tx.delete(webauthnChallenges).where(eq(webauthnChallenges.userId, userId))
    await tx.update(users).set({ passwordHash: null, updatedAt: now }).where(eq(users.id, userId))
    await endAccess()
    claimed = { passwordCleared: true, passkeys: passkeysRemoved, totp: false, identities: [] }
  }
  if (identity !== undefined) {
    await tx.insert(identities).values({ ...identity, userId, createdAt: now }).onConflictDoNothing()
    // Linked by a request that raced this one, to another user or beside ours: undo everything.
    if (await identityConflicts(tx, userId, identity)) throw new IdentityConflict()
  }
  return { outcome: 'proved', claimed, sessionsEnded }
}

export function passkeyRow (passkey: NewPasskey, now: Date) {
  return { ...passkey, transports: passkey.transports.join(','), createdAt: now }
}

export function toPasskey (row: typeof passkeys.$inferSelect): PasskeyRecord {
  return { ...row, transports: row.transports === '' ? [] : row.transports.split(',') }
}

import type { SessionsStore } from '../store.js'
import { and, eq, inArray, isNotNull, isNull, lt, lte, ne, notExists, or, sql } from 'drizzle-orm'
import type { NewRefreshToken, NewSession, Rotation, RotatedToken, SessionState } from '../store.js'
import { refreshTokens, revocations, sessions } from './schema.js'
import { SESSION_ROW_GRACE_MS, logRevocations, revokeTokens, voidMfaChallenges, translateSqliteError, findSqliteError } from './queries.js'
import type { SqliteConnection } from './connection.js'
import { parseActiveMembership } from '../active-membership.js'
import { foundRefreshToken } from '../refresh-token-read.js'

type RotationOutcome = { rotated: RotatedToken | undefined } | { error: unknown }

/** The sessions of the SQLite store (db/store/sessions.ts). */
export function sessionsQueries (c: SqliteConnection): SessionsStore {
  /** One rotation, a savepoint of the batch's transaction. */
  function rotateOne (rotation: Rotation): RotatedToken | undefined {
    const { previousHash, successorHash, now, refreshTokenTtlMs, sessionMaxAgeMs, expectedUserId } = rotation
    const [claimed] = c.statements.rotateRefreshToken.all({
      previousHash,
      successorHash,
      now: now.getTime(),
      expectedUserId: expectedUserId ?? null,
      oldestSessionStart: now.getTime() - sessionMaxAgeMs
    })
    if (claimed === undefined) return undefined
    const expiresAt = new Date(Math.min(now.getTime() + refreshTokenTtlMs, claimed.sessionStartedAt + sessionMaxAgeMs))
    c.statements.insertRefreshToken.run({ tokenHash: successorHash, userId: claimed.userId, familyId: claimed.familyId, expiresAt, now })
    return { userId: claimed.userId, familyId: claimed.familyId, statusIndex: claimed.statusIndex, expiresAt, activeOrgId: claimed.activeOrgId, activeMembership: parseActiveMembership(claimed.activeMembership) }
  }

  /** The batch's transaction and its savepoints, made once per connection (better-sqlite3 wraps each function anew). */
  let transactions: { connection: SqliteConnection['connection'], commitBatch: (batch: SqliteConnection['pendingRotations'], outcomes: RotationOutcome[]) => void } | undefined
  function batchTransaction () {
    if (transactions?.connection !== c.connection) {
      const savepoint = c.connection.transaction(rotateOne)
      const commitBatch = c.connection.transaction((batch: SqliteConnection['pendingRotations'], outcomes: RotationOutcome[]) => {
        for (const { rotation } of batch) {
          try {
            outcomes.push({ rotated: savepoint(rotation) })
          } catch (error) {
            outcomes.push({ error: translateSqliteError(error) })
          }
        }
      })
      transactions = { connection: c.connection, commitBatch: (batch, outcomes) => { commitBatch.immediate(batch, outcomes) } }
    }
    return transactions.commitBatch
  }

  /**
   * Group commit: the rotations asked for in one turn of the event loop share
   * one transaction, so one set of WAL writes instead of one per rotation
   * (the writes were most of a rotation's cost). Each rotation is a savepoint
   * of its own: its claim (one UPDATE … RETURNING that checks the token, its
   * session and its user, and reads what the refresh needs: no read before it)
   * and its successor's insert land together or not at all, and its failure
   * touches no other. Every caller is answered after the commit, so a rotation
   * is as durable as before.
   */
  function commitRotations () {
    if (c.readOnly) c.reopen()
    const batch = c.pendingRotations
    c.pendingRotations = []
    const outcomes: RotationOutcome[] = []
    try {
      batchTransaction()(batch, outcomes)
    } catch (error) {
      // BEGIN or COMMIT failed (busy, disk full, read-only, store closed): nothing was written, every rotation fails.
      if (findSqliteError(error)?.code.startsWith('SQLITE_READONLY') === true) c.readOnly = true
      for (const { reject } of batch) reject(translateSqliteError(error))
      return
    }
    batch.forEach(({ resolve, reject }, index) => {
      const outcome = outcomes[index]
      if ('error' in outcome) reject(outcome.error)
      else resolve(outcome.rotated)
    })
  }

  return {
    async createRefreshToken (token: NewRefreshToken) {
      c.run(() => c.statements.insertRefreshToken.run({ ...token, now: new Date() }))
    },

    async findRefreshToken (tokenHash: string) {
      const row = c.run(() => c.statements.refreshTokenByHash.get({ tokenHash }))
      return row === undefined ? undefined : foundRefreshToken(row)
    },

    async rotateRefreshToken (rotation: Rotation) {
      return await new Promise<RotatedToken | undefined>((resolve, reject) => {
        if (c.pendingRotations.push({ rotation, resolve, reject }) === 1) {
          setImmediate(() => commitRotations())
        }
      })
    },

    async revokeFamily (familyId: string, now: Date) {
      const live = and(eq(refreshTokens.familyId, familyId), isNull(refreshTokens.revokedAt))
      c.run(() => c.db.transaction((tx) => {
        if (logRevocations(tx, live, now, false) > 0) c.statements.revokeFamily.run({ familyId, now: now.getTime() })
      }, { behavior: 'immediate' }))
    },

    async revokeUserSessions (userId: number, now: Date, options: { exceptFamilyId?: string } = {}) {
      const live = and(
        eq(refreshTokens.userId, userId),
        isNull(refreshTokens.revokedAt),
        options.exceptFamilyId === undefined ? undefined : ne(refreshTokens.familyId, options.exceptFamilyId)
      )
      return c.run(() => c.db.transaction((tx) => {
        const sessions = revokeTokens(tx, live, now)
        voidMfaChallenges(tx, userId, now)
        return sessions
      }, { behavior: 'immediate' }))
    },

    async claimStatusIndex (sessionId: string, statusIndex: number) {
      return c.run(() => c.statements.claimStatusIndex.run({ statusIndex, sessionId }).changes > 0)
    },

    async revokeStatusIndex (sessionId: string, statusIndex: number, now: Date) {
      c.run(() => c.db.insert(revocations).values({ sessionId, userId: 0, statusIndex, userDeleted: false, revokedAt: now }).run())
    },

    async highestStatusIndex () {
      return c.run(() => c.statements.highestStatusIndex.get()?.highest ?? null)
    },

    async readRevocations (afterSeq: number, since: Date, limit: number) {
      return c.run(() => c.statements.revocationsAfter.all({ afterSeq, since: since.getTime(), limit }))
    },

    async pruneRevocations (before: Date) {
      return c.run(() => c.db.delete(revocations).where(lt(revocations.revokedAt, before)).run().changes)
    },

    async pruneRefreshTokens (now: Date, limit: number) {
      const prunable = c.db.select({ tokenHash: refreshTokens.tokenHash }).from(refreshTokens)
        .where(or(lte(refreshTokens.expiresAt, now), isNotNull(refreshTokens.revokedAt)))
        .limit(limit)
      // A session row whose tokens are all gone shows nowhere; the age bound spares one whose login is in flight.
      const orphanedSessions = c.db.select({ id: sessions.id }).from(sessions)
        .where(and(
          lte(sessions.createdAt, new Date(now.getTime() - SESSION_ROW_GRACE_MS)),
          notExists(c.db.select({ one: sql`1` }).from(refreshTokens).where(eq(refreshTokens.familyId, sessions.id)))
        ))
        .limit(limit)
      return c.run(() => c.db.transaction((tx) => {
        const pruned = tx.delete(refreshTokens).where(inArray(refreshTokens.tokenHash, prunable)).run().changes
        tx.delete(sessions).where(inArray(sessions.id, orphanedSessions)).run()
        return pruned
      }, { behavior: 'immediate' }))
    },

    async createSession (session: NewSession, now: Date) {
      c.run(() => c.statements.insertSession.run({ ...session, now, authenticatedAt: session.authenticatedAt ?? now, amr: session.amr ?? '' }))
    },

    async startSession (session: NewSession, token: NewRefreshToken, now: Date) {
      c.run(() => c.db.transaction(() => {
        c.statements.insertSession.run({ ...session, now, authenticatedAt: session.authenticatedAt ?? now, amr: session.amr ?? '' })
        c.statements.insertRefreshToken.run({ ...token, now })
        if (session.login !== false) c.statements.markLogin.run({ id: session.userId, now: now.getTime() })
      }, { behavior: 'immediate' }))
    },

    async markSessionAuthenticated (id: string, now: Date, amr?: string) {
      c.run(() => c.db.update(sessions).set({ authenticatedAt: now, ...(amr === undefined ? {} : { amr }) }).where(eq(sessions.id, id)).run())
    },

    async touchSession (id: string, now: Date) {
      c.run(() => c.statements.touchSession.run({ id, now: now.getTime() }))
    },

    async setActiveOrganisation (sessionId: string, orgId: number | null) {
      c.run(() => c.db.update(sessions).set({ activeOrgId: orgId }).where(eq(sessions.id, sessionId)).run())
    },

    async findSession (id: string) {
      return c.run(() => c.db.select().from(sessions).where(eq(sessions.id, id)).get())
    },

    async listLiveSessions (userId: number, now: Date) {
      return c.run(() => c.statements.liveSessionsOfUser.all({ userId, now: now.getTime() }))
    },

    async sessionState (familyId: string, now: Date): Promise<SessionState> {
      return c.run(() => {
        if (c.statements.liveFamilyToken.get({ familyId, now: now.getTime() }) !== undefined) return 'live'
        return c.statements.anyFamilyToken.get({ familyId }) === undefined ? 'unknown' : 'revoked'
      })
    }
  }
}

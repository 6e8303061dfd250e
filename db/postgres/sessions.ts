import type { SessionsStore } from '../store.js'
import { and, desc, eq, exists, inArray, isNotNull, lt, lte, notExists, or, sql, type SQL } from 'drizzle-orm'
import type { NewRefreshToken, NewSession, Rotation, SessionState } from '../store.js'
import { refreshTokens, revocations, sessions, users } from './schema.js'
import { SESSION_ROW_GRACE_MS, revokeTokensWith, voidMfaChallenges } from './queries.js'
import type { PostgresConnection } from './connection.js'
import { liveTokenOf } from '../live-sessions.js'
import { parseActiveMembership } from '../active-membership.js'
import { foundRefreshToken } from '../refresh-token-read.js'

/** The sessions of the PostgreSQL store (db/store/sessions.ts). */
export function sessionsQueries (c: PostgresConnection): SessionsStore {
  /**
   * Revokes the refresh tokens matching `tokens` and writes a log row per session they belong to, in
   * one statement (the sessions logged are exactly the ones this update revoked), with `alsoWith`'s
   * writes (more WITH clauses: PostgreSQL runs each once, whether the query reads them or not). Returns how many.
   */
  async function revokeTokens (tokens: SQL, now: Date, alsoWith: SQL = sql``): Promise<number> {
    return await c.run(() => revokeTokensWith(c.db, tokens, now, alsoWith))
  }

  return {
    async createRefreshToken (token: NewRefreshToken) {
      await c.run(() => c.db.insert(refreshTokens).values({ ...token, createdAt: new Date() }))
    },

    async findRefreshToken (tokenHash: string) {
      const row = await c.run(async () => (await c.statements.refreshTokenByHash.execute({ tokenHash }))[0])
      return row === undefined ? undefined : foundRefreshToken(row)
    },

    async rotateRefreshToken ({ previousHash, successorHash, now, refreshTokenTtlMs, sessionMaxAgeMs, expectedUserId }: Rotation) {
      // One statement: the conditional update takes the row's lock (a concurrent rotation on any
      // instance waits for our commit, then finds rotated_at set and updates nothing), and the
      // successor is inserted from what it returned, in the same statement's transaction.
      const sessionStart = sql`coalesce((select s.created_at from sessions s where s.id = t.family_id), t.created_at)`
      const result = await c.run(() => c.db.execute<{ user_id: number, family_id: string, status_index: number | null, expires_at: Date | string, active_org_id: number | null, active_membership: string | null }>(sql`
        with claimed as (
          update refresh_tokens t set rotated_at = ${now}, replaced_by = ${successorHash}
          where t.token_hash = ${previousHash} and t.rotated_at is null and t.revoked_at is null and t.expires_at > ${now}
            and (${expectedUserId ?? null}::integer is null or t.user_id = ${expectedUserId ?? null}::integer)
            and not exists (select 1 from users u where u.id = t.user_id and u.disabled_at is not null)
            and ${sessionStart} > ${new Date(now.getTime() - sessionMaxAgeMs)}
          returning t.user_id, t.family_id, ${sessionStart} as session_started_at
        ), successor as (
          insert into refresh_tokens (token_hash, user_id, family_id, expires_at, created_at)
          select ${successorHash}, user_id, family_id,
            least(${new Date(now.getTime() + refreshTokenTtlMs)}::timestamptz, session_started_at + ${sessionMaxAgeMs} * interval '1 millisecond'), ${now}
          from claimed
          returning user_id, family_id, expires_at
        )
        select successor.user_id, successor.family_id, successor.expires_at,
          (select i.status_index from session_status_indexes i where i.session_id = successor.family_id) as status_index,
          (select s.active_org_id from sessions s where s.id = successor.family_id) as active_org_id,
          -- The active organisation's membership as it stands, in this statement: the refresh's org claim reads nothing more.
          (select o.slug || ' ' || m.role from sessions s
            join memberships m on m.org_id = s.active_org_id and m.user_id = successor.user_id
            join organizations o on o.id = m.org_id
            where s.id = successor.family_id) as active_membership
        from successor`))
      const [row] = result.rows
      if (row === undefined) return undefined
      return { userId: row.user_id, familyId: row.family_id, statusIndex: row.status_index, expiresAt: new Date(row.expires_at), activeOrgId: row.active_org_id, activeMembership: parseActiveMembership(row.active_membership) }
    },

    async revokeFamily (familyId: string, now: Date) {
      await revokeTokens(sql`family_id = ${familyId} and revoked_at is null`, now)
    },

    async revokeUserSessions (userId: number, now: Date, options: { exceptFamilyId?: string } = {}) {
      const except = options.exceptFamilyId === undefined ? sql`` : sql` and family_id <> ${options.exceptFamilyId}`
      return await revokeTokens(sql`user_id = ${userId} and revoked_at is null${except}`, now, sql`,
        voided as (${voidMfaChallenges(userId, now)})`)
    },

    async claimStatusIndex (sessionId: string, statusIndex: number) {
      const claimed = await c.run(() => c.db.execute(sql`
        insert into session_status_indexes (status_index, session_id)
        select ${statusIndex}, ${sessionId} where not exists (select 1 from revocations where status_index = ${statusIndex})
        on conflict (status_index) do nothing`))
      return (claimed.rowCount ?? 0) > 0
    },

    async revokeStatusIndex (sessionId: string, statusIndex: number, now: Date) {
      await c.run(() => c.db.insert(revocations).values({ sessionId, userId: 0, statusIndex, userDeleted: false, revokedAt: now }))
    },

    async highestStatusIndex () {
      const highest = await c.run(() => c.db.execute<{ highest: number | null }>(sql`select max(status_index) as highest from session_status_indexes`))
      return highest.rows[0]?.highest ?? null
    },

    async readRevocations (afterSeq: number, since: Date, limit: number) {
      return c.run(() => c.statements.revocationsAfter.execute({ afterSeq, since: since.toISOString(), limit }))
    },

    async pruneRevocations (before: Date) {
      return c.run(async () => (await c.db.delete(revocations).where(lt(revocations.revokedAt, before))).rowCount ?? 0)
    },

    async pruneRefreshTokens (now: Date, limit: number) {
      // SKIP LOCKED: instances pruning at the same moment take different rows instead of waiting on each other.
      const prunable = c.db.select({ tokenHash: refreshTokens.tokenHash }).from(refreshTokens)
        .where(or(lte(refreshTokens.expiresAt, now), isNotNull(refreshTokens.revokedAt)))
        .limit(limit)
        .for('update', { skipLocked: true })
      // A session row whose tokens are all gone shows nowhere; the age bound spares one whose login is in flight.
      const orphanedSessions = c.db.select({ id: sessions.id }).from(sessions)
        .where(and(
          lte(sessions.createdAt, new Date(now.getTime() - SESSION_ROW_GRACE_MS)),
          notExists(c.db.select({ one: sql`1` }).from(refreshTokens).where(eq(refreshTokens.familyId, sessions.id)))
        ))
        .limit(limit)
        .for('update', { skipLocked: true })
      return c.run(() => c.transaction(async (tx) => {
        const pruned = await tx.delete(refreshTokens).where(inArray(refreshTokens.tokenHash, prunable))
        await tx.delete(sessions).where(inArray(sessions.id, orphanedSessions))
        return pruned.rowCount ?? 0
      }))
    },

    async createSession (session: NewSession, now: Date) {
      await c.run(() => c.db.insert(sessions).values({ ...session, createdAt: now, lastUsedAt: now, authenticatedAt: session.authenticatedAt ?? now }))
    },

    async startSession (session: NewSession, token: NewRefreshToken, now: Date) {
      const { login, ...row } = session
      await c.run(() => c.transaction(async (tx) => {
        await tx.insert(sessions).values({ ...row, createdAt: now, lastUsedAt: now, authenticatedAt: session.authenticatedAt ?? now })
        await tx.insert(refreshTokens).values({ ...token, createdAt: now })
        if (login !== false) await tx.update(users).set({ lastLoginAt: now }).where(eq(users.id, session.userId))
      }))
    },

    async markSessionAuthenticated (id: string, now: Date, amr?: string) {
      await c.run(() => c.db.update(sessions).set({ authenticatedAt: now, ...(amr === undefined ? {} : { amr }) }).where(eq(sessions.id, id)))
    },

    async touchSession (id: string, now: Date) {
      await c.run(() => c.db.update(sessions).set({ lastUsedAt: now }).where(eq(sessions.id, id)))
    },

    async setActiveOrganisation (sessionId: string, orgId: number | null) {
      await c.run(() => c.db.update(sessions).set({ activeOrgId: orgId }).where(eq(sessions.id, sessionId)))
    },

    async findSession (id: string) {
      return c.run(async () => (await c.db.select().from(sessions).where(eq(sessions.id, id)))[0])
    },

    async listLiveSessions (userId: number, now: Date) {
      const liveToken = c.db.select({ one: sql`1` }).from(refreshTokens).where(liveTokenOf(refreshTokens, sessions.id, now))
      return c.run(() => c.db.select().from(sessions)
        .where(and(eq(sessions.userId, userId), exists(liveToken)))
        .orderBy(desc(sessions.createdAt)))
    },

    async sessionState (familyId: string, now: Date): Promise<SessionState> {
      const [state] = await c.run(() => c.statements.familyTokenState.execute({ familyId, now: now.toISOString() }))
      if (state === undefined || state.tokens === 0) return 'unknown'
      return state.live > 0 ? 'live' : 'revoked'
    }
  }
}

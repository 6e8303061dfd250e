import { setImmediate as nextTurn } from 'node:timers/promises'
import fp from 'fastify-plugin'
import { currentDate } from '../../core/clock.js'
import { ADMIN_ACTION_TYPES } from '../../core/events/types.js'
import { runPeriodically } from '../../core/periodic.js'

export interface TokenPruningOptions {
  /** How often to prune; 0 never does. */
  intervalSeconds: number
  /** Security events older than this are deleted (SECURITY_EVENT_RETENTION). */
  securityEventRetentionSeconds: number
  /** The audit trail's (admin actions) older than this (AUDIT_RETENTION, at least SECURITY_EVENT_RETENTION). */
  auditRetentionSeconds: number
}

/** Rows deleted per statement: each batch is one short write, so requests wait behind none for long. */
export const PRUNE_BATCH_SIZE = 500
/**
 * How long a mail sent or given up stays in the outbox (its recipient and subject, for an operator's questions; the body is gone),
 * and a webhook event delivered or given up in its outbox (a given-up event keeps its body until then).
 */
export const FINISHED_MAIL_RETENTION_MS = 7 * 24 * 3_600_000
/** How long an expired sign-in code stays: the day's quota of codes an address may be mailed counts it (core/email-codes). */
export const EXPIRED_EMAIL_CODE_RETENTION_MS = 24 * 3_600_000

/**
 * Deletes expired and revoked refresh tokens, security events past their
 * retention (an admin's actions past AUDIT_RETENTION), mail and webhook events delivered or given up a week ago, the OAuth provider's expired
 * models and the mailed sign-in codes expired a day ago, in the background (core/periodic.ts, REFRESH_TOKEN_PRUNE_INTERVAL),
 * in small batches with a turn of the event loop between them. Rotated tokens
 * stay until they expire: presenting one again must still be recognised as reuse.
 */
export default fp<TokenPruningOptions>(async (fastify, { intervalSeconds, securityEventRetentionSeconds, auditRetentionSeconds }) => {
  if (intervalSeconds === 0) return
  const { store, clock } = fastify
  const state = { closing: false }

  /** Runs one pruning statement until it deletes less than a full batch; returns how many rows went. */
  async function inBatches (pruneBatch: () => Promise<number>): Promise<number> {
    let deleted = 0
    let batch: number
    do {
      batch = await pruneBatch()
      deleted += batch
      await nextTurn()
    } while (batch === PRUNE_BATCH_SIZE && !state.closing)
    return deleted
  }

  async function prune (): Promise<void> {
    const tokens = await inBatches(() => store.pruneRefreshTokens(currentDate(clock), PRUNE_BATCH_SIZE))
    if (tokens > 0) fastify.log.info({ deleted: tokens }, 'pruned expired and revoked refresh tokens')
    const eventsBefore = new Date(clock.now() - securityEventRetentionSeconds * 1000)
    const audit = { olderThan: new Date(clock.now() - auditRetentionSeconds * 1000), types: ADMIN_ACTION_TYPES }
    const events = await inBatches(() => store.pruneSecurityEvents(eventsBefore, PRUNE_BATCH_SIZE, audit))
    if (events > 0) fastify.log.info({ deleted: events }, 'pruned security events past SECURITY_EVENT_RETENTION (admin actions past AUDIT_RETENTION)')
    const mailsBefore = new Date(clock.now() - FINISHED_MAIL_RETENTION_MS)
    const mails = await inBatches(() => store.pruneMails(mailsBefore, PRUNE_BATCH_SIZE))
    if (mails > 0) fastify.log.info({ deleted: mails }, 'pruned mail sent or given up over a week ago')
    const webhooks = await inBatches(() => store.pruneWebhooks(mailsBefore, PRUNE_BATCH_SIZE))
    if (webhooks > 0) fastify.log.info({ deleted: webhooks }, 'pruned webhook events delivered or given up over a week ago')
    const oauthModels = await inBatches(() => store.pruneOAuthModels(currentDate(clock), PRUNE_BATCH_SIZE))
    if (oauthModels > 0) fastify.log.info({ deleted: oauthModels }, 'pruned expired OAuth provider models (codes, tokens, grants, sessions, interactions)')
    const emailCodes = await store.deleteExpiredEmailCodes(new Date(clock.now() - EXPIRED_EMAIL_CODE_RETENTION_MS))
    if (emailCodes > 0) fastify.log.info({ deleted: emailCodes }, 'pruned mailed sign-in codes expired over a day ago')
  }

  const pruning = runPeriodically(intervalSeconds * 1000, prune, {
    onError: (error) => { fastify.log.warn({ err: error }, 'pruning failed; retrying at the next interval') }
  })
  fastify.addHook('onClose', async () => {
    // A run under way stops after its current batch.
    state.closing = true
    await pruning.stop()
  })
}, { name: 'token-pruning', dependencies: ['store', 'clock'] })

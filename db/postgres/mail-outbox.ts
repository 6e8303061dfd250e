import { and, asc, count, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import type { drizzle } from 'drizzle-orm/node-postgres'
import type { ClaimedMail, MailMessage } from '../store.js'
import { mailOutbox } from './schema.js'

/*
 * The mail outbox's queries (the store's enqueueMail … pruneMails). A claim is one UPDATE whose
 * rows come from a SELECT … FOR UPDATE SKIP LOCKED: instances claiming at once take different rows,
 * and a row another instance claimed in the meantime is re-checked against its new lease and
 * dropped (READ COMMITTED re-evaluates a locked row's condition), so each mail has one sender.
 */

type Db = ReturnType<typeof drizzle>

/** The row of a new mail, due at once. */
export function outboxRow (mail: MailMessage, now: Date) {
  return { to: mail.to, subject: mail.subject, text: mail.text, nextAttemptAt: now, createdAt: now }
}

export async function claimMails (db: Db, now: Date, claimedUntil: Date, limit: number): Promise<ClaimedMail[]> {
  const due = db.select({ id: mailOutbox.id }).from(mailOutbox)
    .where(and(
      eq(mailOutbox.status, 'pending'),
      lte(mailOutbox.nextAttemptAt, now),
      or(isNull(mailOutbox.claimedUntil), lte(mailOutbox.claimedUntil, now))
    ))
    .orderBy(asc(mailOutbox.id))
    .limit(limit)
    .for('update', { skipLocked: true })
  return await db.update(mailOutbox)
    .set({ claimedUntil, attempts: sql`${mailOutbox.attempts} + 1` })
    .where(inArray(mailOutbox.id, due))
    .returning({ id: mailOutbox.id, to: mailOutbox.to, subject: mailOutbox.subject, text: mailOutbox.text, attempts: mailOutbox.attempts })
}

export async function markMailSent (db: Db, id: number, now: Date): Promise<void> {
  await db.update(mailOutbox).set({ status: 'sent', finishedAt: now, text: '', claimedUntil: null, lastError: null }).where(eq(mailOutbox.id, id))
}

export async function retryMail (db: Db, id: number, retryAt: Date, error: string): Promise<void> {
  await db.update(mailOutbox).set({ nextAttemptAt: retryAt, claimedUntil: null, lastError: error }).where(eq(mailOutbox.id, id))
}

export async function markMailFailed (db: Db, id: number, now: Date, error: string): Promise<void> {
  await db.update(mailOutbox).set({ status: 'failed', finishedAt: now, text: '', claimedUntil: null, lastError: error }).where(eq(mailOutbox.id, id))
}

export async function countPendingMails (db: Db): Promise<number> {
  const [{ pending }] = await db.select({ pending: count() }).from(mailOutbox).where(eq(mailOutbox.status, 'pending'))
  return pending
}

export async function pruneMails (db: Db, finishedBefore: Date, limit: number): Promise<number> {
  // SKIP LOCKED: instances pruning at the same moment take different rows instead of waiting on each other.
  const prunable = db.select({ id: mailOutbox.id }).from(mailOutbox)
    .where(lte(mailOutbox.finishedAt, finishedBefore)).limit(limit).for('update', { skipLocked: true })
  return (await db.delete(mailOutbox).where(inArray(mailOutbox.id, prunable))).rowCount ?? 0
}

import { and, asc, count, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import type { drizzle } from 'drizzle-orm/better-sqlite3'
import type { ClaimedMail, MailMessage } from '../store.js'
import { mailOutbox } from './schema.js'

/*
 * The mail outbox's queries (the store's enqueueMail … pruneMails). SQLite has one writer at a
 * time, so one UPDATE that picks and leases rows is atomic against any other process on the file
 * (the CLI, a second server): a mail is claimed by one of them only.
 */

type Db = ReturnType<typeof drizzle>

/** The row of a new mail, due at once. */
export function outboxRow (mail: MailMessage, now: Date) {
  return { to: mail.to, subject: mail.subject, text: mail.text, nextAttemptAt: now, createdAt: now }
}

export function claimMails (db: Db, now: Date, claimedUntil: Date, limit: number): ClaimedMail[] {
  const due = db.select({ id: mailOutbox.id }).from(mailOutbox)
    .where(and(
      eq(mailOutbox.status, 'pending'),
      lte(mailOutbox.nextAttemptAt, now),
      or(isNull(mailOutbox.claimedUntil), lte(mailOutbox.claimedUntil, now))
    ))
    .orderBy(asc(mailOutbox.id))
    .limit(limit)
  return db.update(mailOutbox)
    .set({ claimedUntil, attempts: sql`${mailOutbox.attempts} + 1` })
    .where(inArray(mailOutbox.id, due))
    .returning({ id: mailOutbox.id, to: mailOutbox.to, subject: mailOutbox.subject, text: mailOutbox.text, attempts: mailOutbox.attempts })
    .all()
}

export function markMailSent (db: Db, id: number, now: Date): void {
  db.update(mailOutbox).set({ status: 'sent', finishedAt: now, text: '', claimedUntil: null, lastError: null }).where(eq(mailOutbox.id, id)).run()
}

export function retryMail (db: Db, id: number, retryAt: Date, error: string): void {
  db.update(mailOutbox).set({ nextAttemptAt: retryAt, claimedUntil: null, lastError: error }).where(eq(mailOutbox.id, id)).run()
}

export function markMailFailed (db: Db, id: number, now: Date, error: string): void {
  db.update(mailOutbox).set({ status: 'failed', finishedAt: now, text: '', claimedUntil: null, lastError: error }).where(eq(mailOutbox.id, id)).run()
}

export function countPendingMails (db: Db): number {
  return db.select({ pending: count() }).from(mailOutbox).where(eq(mailOutbox.status, 'pending')).get()?.pending ?? 0
}

export function pruneMails (db: Db, finishedBefore: Date, limit: number): number {
  const prunable = db.select({ id: mailOutbox.id }).from(mailOutbox).where(lte(mailOutbox.finishedAt, finishedBefore)).limit(limit)
  return db.delete(mailOutbox).where(inArray(mailOutbox.id, prunable)).run().changes
}

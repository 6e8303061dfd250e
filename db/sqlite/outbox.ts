import type { MailMessage, OutboxStore } from '../store.js'
import { mailQueue, outboxRow } from './mail-outbox.js'
import { mailOutbox } from './schema.js'
import type { SqliteConnection } from './connection.js'

/** The mail outbox of the SQLite store (db/store/outbox.ts). */
export function outboxQueries (c: SqliteConnection): OutboxStore {
  return {
    async enqueueMail (mail: MailMessage, now: Date) {
      c.run(() => c.db.insert(mailOutbox).values(outboxRow(mail, now)).run())
    },
    claimMails: async (now, claimedUntil, limit) => c.run(() => mailQueue.claim(c.db, now, claimedUntil, limit)),
    markMailSent: async (id, now) => { c.run(() => mailQueue.markDone(c.db, id, now)) },
    retryMail: async (id, retryAt, error) => { c.run(() => mailQueue.retry(c.db, id, retryAt, error)) },
    markMailFailed: async (id, now, error) => { c.run(() => mailQueue.markFailed(c.db, id, now, error)) },
    countPendingMails: async () => c.run(() => mailQueue.countPending(c.db)),
    pruneMails: async (finishedBefore, limit) => c.run(() => mailQueue.prune(c.db, finishedBefore, limit))
  }
}

import type { MailMessage, OutboxStore } from '../store.js'
import { mailQueue, outboxRow } from './mail-outbox.js'
import { mailOutbox } from './schema.js'
import type { PostgresConnection } from './connection.js'

/** The mail outbox of the PostgreSQL store (db/store/outbox.ts). */
export function outboxQueries (c: PostgresConnection): OutboxStore {
  return {
    async enqueueMail (mail: MailMessage, now: Date) {
      await c.run(() => c.db.insert(mailOutbox).values(outboxRow(mail, now)))
    },
    claimMails: async (now, claimedUntil, limit) => await c.run(() => mailQueue.claim(c.db, now, claimedUntil, limit)),
    markMailSent: async (id, now) => { await c.run(() => mailQueue.markDone(c.db, id, now)) },
    retryMail: async (id, retryAt, error) => { await c.run(() => mailQueue.retry(c.db, id, retryAt, error)) },
    markMailFailed: async (id, now, error) => { await c.run(() => mailQueue.markFailed(c.db, id, now, error)) },
    countPendingMails: async () => await c.run(() => mailQueue.countPending(c.db)),
    pruneMails: async (finishedBefore, limit) => await c.run(() => mailQueue.prune(c.db, finishedBefore, limit))
  }
}

import type { OutboxStore } from '../store.js'
import type { MailMessage } from '../store.js'
import * as outbox from './mail-outbox.js'
import { mailOutbox } from './schema.js'
import type { SqliteConnection } from './connection.js'

/** The outbox of the SQLite store (db/store/outbox.ts). */
export function outboxQueries (c: SqliteConnection): OutboxStore {
  return {
    async enqueueMail (mail: MailMessage, now: Date) {
      c.run(() => c.db.insert(mailOutbox).values(outbox.outboxRow(mail, now)).run())
    },

    async claimMails (now: Date, claimedUntil: Date, limit: number) {
      return c.run(() => outbox.claimMails(c.db, now, claimedUntil, limit))
    },

    async markMailSent (id: number, now: Date) {
      c.run(() => outbox.markMailSent(c.db, id, now))
    },

    async retryMail (id: number, retryAt: Date, error: string) {
      c.run(() => outbox.retryMail(c.db, id, retryAt, error))
    },

    async markMailFailed (id: number, now: Date, error: string) {
      c.run(() => outbox.markMailFailed(c.db, id, now, error))
    },

    async countPendingMails () {
      return c.run(() => outbox.countPendingMails(c.db))
    },

    async pruneMails (finishedBefore: Date, limit: number) {
      return c.run(() => outbox.pruneMails(c.db, finishedBefore, limit))
    }
  }
}

import type { ClaimedMail, MailMessage } from '../store.js'
import { outboxQueue } from './outbox-queue.js'
import { mailOutbox } from './schema.js'

/** The row of a new mail, due at once (written alone, or in the transaction of the change it announces). */
export function outboxRow (mail: MailMessage, now: Date) {
  return { to: mail.to, subject: mail.subject, text: mail.text, nextAttemptAt: now, createdAt: now }
}

/** The mail outbox's claims and outcomes: the body, which may hold a link's token, is erased once sent or given up. */
export const mailQueue = outboxQueue<ClaimedMail>(mailOutbox, {
  claimed: { id: mailOutbox.id, to: mailOutbox.to, subject: mailOutbox.subject, text: mailOutbox.text, attempts: mailOutbox.attempts },
  done: 'sent',
  erasedWhenDone: { text: '' },
  erasedWhenFailed: { text: '' }
})

/** A mail as the service writes it to the outbox (plain text). */
export interface MailMessage {
  to: string
  subject: string
  text: string
}

/** A mail a worker claimed from the outbox for one delivery attempt. */
export interface ClaimedMail extends MailMessage {
  id: number
  /** Attempts so far, this one included. */
  attempts: number
}

/** The mail outbox: messages written with the change they announce, claimed and sent by the workers of every instance. */
export interface OutboxStore {
  /** Writes a mail to the outbox, due at once. */
  enqueueMail (mail: MailMessage, now: Date): Promise<void>
  /**
   * Claims up to `limit` pending mails due at `now` that no live claim holds, oldest first: each gets
   * the lease `claimedUntil` and one more attempt, atomically, so no other process (or instance) claims
   * it before the lease ends.
   */
  claimMails (now: Date, claimedUntil: Date, limit: number): Promise<ClaimedMail[]>
  /** The mail went out: erases its body and ends its claim. */
  markMailSent (id: number, now: Date): Promise<void>
  /** The attempt failed: the mail is due again at `retryAt`, unclaimed. */
  retryMail (id: number, retryAt: Date, error: string): Promise<void>
  /** The last attempt failed: the mail is given up and its body erased. */
  markMailFailed (id: number, now: Date, error: string): Promise<void>
  /** Mails neither sent nor given up. */
  countPendingMails (): Promise<number>
  /** Deletes up to `limit` mails sent or given up before `finishedBefore`; returns how many (pruning calls again while it returns `limit`). */
  pruneMails (finishedBefore: Date, limit: number): Promise<number>
}

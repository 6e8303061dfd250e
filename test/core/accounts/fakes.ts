import type { Client, EventSubject, SecurityEventType } from '../../../core/events/security-events.js'
import { ReauthenticationRequiredError } from '../../../core/errors.js'
import type { MailJob, MailMessage } from '../../../core/mail/mailer.js'
import type { AuthenticationMethod } from '../../../core/sessions/authentication-methods.js'
import type { StartedSession } from '../../../core/sessions/sessions.js'
import type { UserWebhookType } from '../../../core/webhooks/webhooks.js'
import type { UserRecord } from '../../../db/store.js'
import type { Test } from 'tap'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

/*
 * Small stand-ins for the services the account and identity rules call, for their unit tests
 * (test/core/accounts, test/core/identities): each records what it was asked.
 */

/** A fresh store, a test clock and the recording stand-ins, as the account's and the identities' rules take them. */
export async function standIns (t: Test) {
  return {
    store: await testStore(t),
    clock: testClock(),
    mailer: fakeMailer(),
    sessions: fakeSessions(),
    securityEvents: recordingEvents(),
    webhooks: recordingWebhooks()
  }
}

export const CLIENT: Client = { ip: '192.0.2.1', userAgent: 'test', requestId: 'req-1' }

/** A mailer that runs each job at once (idle() waits for them) and keeps the messages given to it directly. */
export function fakeMailer () {
  const jobs: Array<Promise<unknown>> = []
  const enqueued: MailMessage[] = []
  return {
    enqueued,
    send (job: MailJob) {
      jobs.push((async () => {
        const message = typeof job === 'function' ? await job() : job
        if (message !== undefined) enqueued.push(message)
      })())
    },
    async enqueue (message: MailMessage) { enqueued.push(message) },
    forOutbox: (message: MailMessage) => message,
    wake () {},
    async idle () { await Promise.all(jobs) }
  }
}

/** Security events as recorded, in order. */
export function recordingEvents () {
  const events: Array<{ type: SecurityEventType } & EventSubject> = []
  return {
    events,
    async record (type: SecurityEventType, _client: Client, subject: EventSubject) { events.push({ type, ...subject }) },
    /** The kinds of events recorded, in order. */
    types: () => events.map(event => event.type)
  }
}

/** Webhooks: the user.* events built (the store builds a change's event in its transaction), in order, with the user's id and email at the time. */
export function recordingWebhooks () {
  const emitted: Array<{ type: UserWebhookType, userId: number, email: string }> = []
  return {
    emitted,
    userEvent: (type: UserWebhookType) => (user: UserRecord) => {
      emitted.push({ type, userId: user.id, email: user.email })
      return undefined
    },
    wake () {}
  }
}

/** Sessions: `stale` holds the sessions whose last password proof is too old (requireFresh refuses them). */
export function fakeSessions () {
  const stale = new Set<string>()
  const started: Array<{ userId: number, methods: AuthenticationMethod[], authenticatedAt?: Date }> = []
  return {
    stale,
    started,
    async requireFresh (sessionId: string) {
      if (stale.has(sessionId)) throw new ReauthenticationRequiredError()
    },
    async proof (_sessionId: string) { return { authenticatedAt: new Date(0), methods: ['password' as const] } },
    async start (userId: number, _client: Client, options: { methods: AuthenticationMethod[], authenticatedAt?: Date }): Promise<StartedSession> {
      started.push({ userId, ...options })
      const sessionId = `session-${started.length}`
      return { userId, sessionId, accessToken: `access-${sessionId}`, refreshToken: `refresh-${sessionId}`, refreshTokenMaxAge: 3600 }
    }
  }
}

import type { AccountStore } from '../../db/store.js'
import { createUserImport } from '../../core/accounts/import.js'
import { createAdmin, type Admin } from '../../core/admin/admin.js'
import { systemClock } from '../../core/clock.js'
import type { Config } from '../../core/config.js'
import { createSecurityEvents } from '../../core/events/security-events.js'
import type { Logger } from '../../core/logger.js'
import { createOutboxWriter } from '../../core/mail/mailer.js'
import { presentAdminUser } from '../../core/schemas/admin.js'
import { createWebhooks } from '../../core/webhooks/webhooks.js'

/** A command's view of the admin rules, and what must happen before the store closes. */
export interface Operator {
  admin: Admin
  /** Webhook deliveries this process started finish (or are left to the service's worker). */
  close (): Promise<void>
}

/**
 * The admin rules (core/admin) for the CLI (issue 33, finding 15): the CLI is another door to the same rules,
 * so `users delete|set-role|import`, `sessions revoke` and `mfa reset` write the audit rows, mails and webhooks that
 * the admin API writes. Mail goes to the outbox for the service's worker; a webhook is written to its outbox as the service
 * writes it. Errors are written to stderr (`log`); the rules' info lines are not printed.
 */
export function operatorRules (store: AccountStore, config: Config, log: Logger): Operator {
  const securityEvents = createSecurityEvents({ store, clock: systemClock, log })
  const webhooks = createWebhooks({ store, clock: systemClock, log, presentUser: presentAdminUser, securityEvents }, { webhooks: config.webhooks })
  const mailer = createOutboxWriter({ store, clock: systemClock }, { sealingKey: config.signingKeyEncryptionKey })
  const admin = createAdmin({
    store,
    clock: systemClock,
    // The operator is on the host: /admin's access rule (authorize) is never asked here.
    sessions: { requireFresh: refuseAuthorize, requireSecondFactor: refuseAuthorize },
    mfa: { status: refuseAuthorize },
    securityEvents,
    mailer,
    webhooks,
    userImport: createUserImport({ store, clock: systemClock })
  }, {
    requireMfa: config.adminRequireMfa,
    publicUrl: config.mail.publicUrl,
    passwordResetTtlSeconds: config.passwordResetTtlSeconds,
    emailVerificationTtlSeconds: config.emailVerificationTtlSeconds
  })
  return { admin, close: async () => { await webhooks.close() } }
}

async function refuseAuthorize (): Promise<never> {
  throw new Error('the CLI acts as the operator: it does not go through /admin\'s access rule')
}

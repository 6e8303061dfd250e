// What a webhook event is, below the service that writes it and the security events that cause most of them.
import type { SecurityEventType } from '../events/types.js'

/** Every event type sent (docs/webhooks.md). */
export const WEBHOOK_TYPES = [
  'user.created', 'user.updated', 'user.deleted', 'user.disabled', 'user.enabled',
  'session.created', 'session.revoked', 'password.changed', 'mfa.changed',
  'org.created', 'org.deleted', 'org.member_added', 'org.member_removed', 'org.member_role_changed'
] as const

export type WebhookType = typeof WEBHOOK_TYPES[number]

/** The events whose `data` is the user as the admin API shows it. */
export type UserWebhookType = Extract<WebhookType, `user.${string}`>

/** The events of an organisation (core/organisations), written with the change by the organisation's rules. */
export type OrgWebhookType = Extract<WebhookType, `org.${string}`>

/**
 * The event a security event is also sent as; security events not listed send nothing. A `user.*`
 * event here carries the user as it is after the change (read from the store).
 */
export const WEBHOOK_OF_SECURITY_EVENT: Partial<Record<SecurityEventType, WebhookType>> = {
  login: 'session.created',
  passkey_login: 'session.created',
  // Logouts too: they are recorded as session_revoked (reason "logout").
  session_revoked: 'session.revoked',
  password_changed: 'password.changed',
  password_reset: 'password.changed',
  mfa_enabled: 'mfa.changed',
  mfa_disabled: 'mfa.changed',
  email_changed: 'user.updated',
  // An admin's actions (core/admin/admin.ts), recorded as events of the user they touched.
  admin_user_created: 'user.created',
  account_disabled: 'user.disabled',
  account_enabled: 'user.enabled',
  role_changed: 'user.updated',
  admin_sessions_revoked: 'session.revoked',
  admin_mfa_reset: 'mfa.changed'
}

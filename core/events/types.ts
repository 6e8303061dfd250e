// What a security event is, below the schemas that show it and the plugin that records it.

/** Every kind of security event, as stored and as GET /auth/security-events shows it. */
export const SECURITY_EVENT_TYPES = [
  'login', 'login_failed', 'account_locked', 'password_changed', 'password_reset', 'email_changed',
  'session_revoked', 'refresh_token_reused', 'reauthenticated', 'identity_linked', 'identity_unlinked',
  'passkey_added', 'passkey_removed', 'passkey_login', 'passkey_counter_regressed',
  'mfa_enabled', 'mfa_disabled', 'mfa_failed', 'mfa_locked', 'recovery_code_used', 'recovery_codes_renewed',
  'oauth_consent_granted', 'oauth_consent_revoked',
  // Organisations (core/organisations): named as the webhooks they send.
  'org.created', 'org.deleted', 'org.member_added', 'org.member_removed', 'org.member_role_changed',
  // An admin's actions (admin API, CLI), with the admin as actor_id.
  'admin_user_created', 'account_disabled', 'account_enabled', 'admin_sessions_revoked', 'admin_mfa_reset',
  'admin_user_deleted', 'role_changed', 'users_imported'
] as const

export type SecurityEventType = typeof SECURITY_EVENT_TYPES[number]

/** An admin's actions: the audit trail, kept AUDIT_RETENTION (with every event that has an actor_id). */
export const ADMIN_ACTION_TYPES: readonly SecurityEventType[] = [
  'admin_user_created', 'account_disabled', 'account_enabled', 'admin_sessions_revoked', 'admin_mfa_reset',
  'admin_user_deleted', 'role_changed', 'users_imported'
]

/** Who made a request, as events and sessions record it. */
export interface Client {
  ip: string | null
  userAgent: string | null
  /** The request id (X-Request-Id), so an event leads to the request's log lines. */
  requestId: string | null
}

import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { ONE_TIME_TOKEN_PURPOSES } from '../store/one-time-tokens.js'

export const users = sqliteTable('users', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  firstName: text('first_name').notNull(),
  lastName: text('last_name').notNull(),
  username: text('username'),
  email: text('email').notNull(),
  /** Null for an account made by signing in with an OpenID provider: no password login until one is set (forgot-password). */
  passwordHash: text('password_hash'),
  emailVerified: integer('email_verified', { mode: 'boolean' }).notNull().default(false),
  emailVerifiedAt: integer('email_verified_at', { mode: 'timestamp_ms' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
  /** 'user' or 'admin' (the admin API, /admin). */
  role: text('role', { enum: ['user', 'admin'] }).notNull().default('user'),
  /** Set while an operator has disabled the account: no login, refresh or provider sign-in. */
  disabledAt: integer('disabled_at', { mode: 'timestamp_ms' }),
  /** Written with the session of each successful login. */
  lastLoginAt: integer('last_login_at', { mode: 'timestamp_ms' })
}, (table) => [
  uniqueIndex('users_email_unique').on(table.email),
  // Usernames are unique ignoring case; null (header-variant users) never collides.
  uniqueIndex('users_username_lower_unique').on(sql`lower(${table.username})`)
])

export const refreshTokens = sqliteTable('refresh_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  familyId: text('family_id').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  rotatedAt: integer('rotated_at', { mode: 'timestamp_ms' }),
  replacedBy: text('replaced_by'),
  revokedAt: integer('revoked_at', { mode: 'timestamp_ms' })
}, (table) => [
  index('refresh_tokens_family_idx').on(table.familyId),
  index('refresh_tokens_user_idx').on(table.userId)
])

/** Session metadata for GET /auth/sessions; the id is the refresh-token family id. Revocation stays on refresh_tokens. */
export const sessions = sqliteTable('sessions', {
  id: text('id').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  lastUsedAt: integer('last_used_at', { mode: 'timestamp_ms' }).notNull(),
  userAgent: text('user_agent'),
  ip: text('ip'),
  /** When the user last proved the password in this session (login, re-authentication); a refresh does not renew it. */
  authenticatedAt: integer('authenticated_at', { mode: 'timestamp_ms' }).notNull().default(sql`0`),
  /**
   * How the user proved itself in this session, space-separated (core/sessions/authentication-methods.ts): the
   * sign-in's methods, and those of every re-authentication since. Empty for a session older than the column.
   */
  amr: text('amr').notNull().default(''),
  /**
   * The organisation the user made active in this session (POST /orgs/:orgId/activate): a refresh puts it in the
   * access token's `org` claim while the membership lasts. No foreign key: the refresh reads the membership,
   * and a deleted organisation or a removed member reads as none.
   */
  activeOrgId: integer('active_org_id')
}, (table) => [
  index('sessions_user_idx').on(table.userId)
])

/** Password-reset and email-verification tokens: only their SHA-256 hash is kept. */
export const oneTimeTokens = sqliteTable('one_time_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  purpose: text('purpose', { enum: ONE_TIME_TOKEN_PURPOSES }).notNull(),
  /** The address a verification link was sent to: it verifies only that address. */
  email: text('email').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  usedAt: integer('used_at', { mode: 'timestamp_ms' })
}, (table) => [
  index('one_time_tokens_user_purpose_idx').on(table.userId, table.purpose)
])

/**
 * The 6-digit sign-in codes mailed by POST /auth/email-code, as a keyed hash of the code and its address. One
 * live code per address: a new one voids the older. `attempts` counts the guesses reserved against it; at the
 * cap (five) it is burnt. Keyed by the address, not a user: a code mailed to an unknown address signs it up.
 */
export const emailCodes = sqliteTable('email_codes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  email: text('email').notNull(),
  codeHash: text('code_hash').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  /** When it was used, or voided by a newer code. */
  usedAt: integer('used_at', { mode: 'timestamp_ms' }),
  attempts: integer('attempts').notNull().default(0)
}, (table) => [
  index('email_codes_email_created_idx').on(table.email, table.createdAt),
  index('email_codes_expires_idx').on(table.expiresAt)
])

export const signingKeys = sqliteTable('signing_keys', {
  kid: text('kid').primaryKey(),
  algorithm: text('algorithm', { enum: ['EdDSA', 'ES256', 'RS256'] }).notNull(),
  publicKeyPem: text('public_key_pem').notNull(),
  /** PKCS#8 PEM, or its sealed form with SIGNING_KEY_ENCRYPTION_KEY; null once the key is retired. */
  privateKeyPem: text('private_key_pem'),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull()
})

/** Security events (logins, failures, lockouts, changes): what GET /auth/security-events shows a user of its account. */
export const securityEvents = sqliteTable('security_events', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  type: text('type').notNull(),
  /** Null for a failed login of an unknown email. */
  userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
  sessionId: text('session_id'),
  ip: text('ip'),
  userAgent: text('user_agent'),
  requestId: text('request_id'),
  /** JSON with what else the event tells (a login's method, the old email address). */
  detail: text('detail'),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  /** The admin who acted (admin API, CLI); null for the user's own events. The row outlives that admin. */
  actorId: integer('actor_id').references(() => users.id, { onDelete: 'set null' })
}, (table) => [
  index('security_events_user_idx').on(table.userId, table.id),
  index('security_events_created_idx').on(table.createdAt),
  index('security_events_type_idx').on(table.type, table.id)
])

/**
 * The session's index in the Token Status List (issue 14), drawn at random (issue 21: a counter let
 * anyone holding a token count the sessions begun since). An index is free again once its session is
 * gone and no revocation-log row names it (core/revocations/status-list.ts).
 */
export const sessionStatusIndexes = sqliteTable('session_status_indexes', {
  statusIndex: integer('status_index').primaryKey(),
  sessionId: text('session_id').notNull().references(() => sessions.id, { onDelete: 'cascade' })
}, (table) => [
  uniqueIndex('session_status_indexes_session_unique').on(table.sessionId)
])

/**
 * The revocation log: one row per revoked session, written in the revoking transaction. Every
 * instance follows it (`seq > cursor`) to refuse the session's access tokens without a store read;
 * rows older than ACCESS_TOKEN_TTL are pruned (their tokens have expired). No foreign keys: a row
 * must outlive the deleted user it tells of.
 */
export const revocations = sqliteTable('revocations', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  /** The revoked session; null in a user-change row (a user's shown fields changed, or the user was deleted: triggers in migration 0014). */
  sessionId: text('session_id'),
  userId: integer('user_id').notNull(),
  statusIndex: integer('status_index'),
  /** The session ended because its user was deleted: its tokens get 404 USER_NOT_FOUND. */
  userDeleted: integer('user_deleted', { mode: 'boolean' }).notNull().default(false),
  revokedAt: integer('revoked_at', { mode: 'timestamp_ms' }).notNull()
}, (table) => [
  index('revocations_revoked_at_idx').on(table.revokedAt),
  index('revocations_status_index_idx').on(table.statusIndex)
])

/** Settings the service decides for itself and every instance shares (the calibrated password-hash parameters), by name. */
export const settings = sqliteTable('settings', {
  name: text('name').primaryKey(),
  value: text('value').notNull()
})

/**
 * Passkeys (WebAuthn credentials) of a user. `id` is ours (what the API shows and takes); the
 * credential id is the authenticator's, looked up at login. The signature counter only grows:
 * a value that goes back means a cloned authenticator.
 */
export const passkeys = sqliteTable('passkeys', {
  id: text('id').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  /** base64url, as the browser's credential.id. */
  credentialId: text('credential_id').notNull(),
  /** The COSE public key, base64url. */
  publicKey: text('public_key').notNull(),
  counter: integer('counter').notNull(),
  /** Comma-separated hints (internal, hybrid, usb, ...) handed back in excludeCredentials. */
  transports: text('transports').notNull().default(''),
  name: text('name').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  lastUsedAt: integer('last_used_at', { mode: 'timestamp_ms' })
}, (table) => [
  uniqueIndex('passkeys_credential_id_unique').on(table.credentialId),
  index('passkeys_user_idx').on(table.userId)
])

/**
 * WebAuthn challenges waiting for their answer, by the SHA-256 of the challenge (found again from
 * the clientDataJSON the browser signs). Single use: consumed by a delete. A registration
 * challenge belongs to the user who asked; a login challenge to nobody yet.
 */
export const webauthnChallenges = sqliteTable('webauthn_challenges', {
  challengeHash: text('challenge_hash').primaryKey(),
  purpose: text('purpose', { enum: ['registration', 'authentication'] }).notNull(),
  userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull()
}, (table) => [
  index('webauthn_challenges_expires_idx').on(table.expiresAt)
])

/**
 * A user's TOTP secret (RFC 6238): sealed with SIGNING_KEY_ENCRYPTION_KEY when it is set. Inactive
 * until confirmed with a code. `last_used_step` is the time step of the last code accepted: a code
 * of that step or an older one is refused (replay), and the conditional update that raises it is
 * what lets only one of two parallel uses of a code pass.
 */
export const totpCredentials = sqliteTable('totp_credentials', {
  userId: integer('user_id').primaryKey().references(() => users.id, { onDelete: 'cascade' }),
  secret: text('secret').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  confirmedAt: integer('confirmed_at', { mode: 'timestamp_ms' }),
  lastUsedStep: integer('last_used_step'),
  /** Wrong codes since the last accepted one: at MFA_MAX_WRONG_CODES the second factor refuses every code until a password reset. */
  failedCodes: integer('failed_codes').notNull().default(0)
})

/** Single-use recovery codes of a user with TOTP, stored only as hashes; a new set replaces the old. */
export const recoveryCodes = sqliteTable('recovery_codes', {
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  codeHash: text('code_hash').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  usedAt: integer('used_at', { mode: 'timestamp_ms' })
}, (table) => [
  primaryKey({ columns: [table.userId, table.codeHash] })
])

/**
 * The second step of a login of an account with TOTP: the mfa_token's SHA-256 hash, its user, and
 * the wrong codes tried with it. Single use, void after too many failures, expires with MFA_TOKEN_TTL.
 */
export const mfaChallenges = sqliteTable('mfa_challenges', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  failures: integer('failures').notNull().default(0),
  usedAt: integer('used_at', { mode: 'timestamp_ms' })
}, (table) => [
  index('mfa_challenges_user_idx').on(table.userId)
])

/**
 * The columns every outbox has (mail_outbox, webhook_outbox), beside what it sends: one worker
 * (core/outbox/outbox-worker.ts) claims, retries and finishes the rows of both, through one set of
 * queries (db/sqlite/outbox-queue.ts). `done` is the status of a row that reached its receiver.
 */
function outboxColumns<Done extends string> (done: Done) {
  return {
    id: integer('id').primaryKey({ autoIncrement: true }),
    status: text('status', { enum: ['pending', done, 'failed'] }).notNull().default('pending'),
    /** Attempts so far, counted when a worker claims the row (a crash mid-send counts too). */
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at', { mode: 'timestamp_ms' }).notNull(),
    /** A worker is sending it until then; past it, another may (the first one died). */
    claimedUntil: integer('claimed_until', { mode: 'timestamp_ms' }),
    lastError: text('last_error'),
    createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
    /** When it was sent or given up. */
    finishedAt: integer('finished_at', { mode: 'timestamp_ms' })
  }
}

/**
 * The mail outbox (plugins/app/mailer.ts): every mail is written here first, a reset or verification
 * mail in the transaction that makes its token, and a worker sends it with retries. A worker claims a
 * row by setting claimed_until (a lease), so no two processes on one file send it both. The body,
 * which may hold a link's token, is erased once the mail is sent or given up; finished rows are pruned.
 * No foreign key: a notice to a previous address tells of no current user.
 */
export const mailOutbox = sqliteTable('mail_outbox', {
  to: text('recipient').notNull(),
  subject: text('subject').notNull(),
  text: text('body').notNull(),
  ...outboxColumns('sent')
}, (table) => [
  index('mail_outbox_due_idx').on(table.status, table.nextAttemptAt),
  index('mail_outbox_finished_idx').on(table.finishedAt)
])

/**
 * Accounts at OpenID Connect providers linked to a user (issue 17): the provider's `sub` is the
 * identity; one identity per provider and user. The email is what the provider said at linking.
 */
export const identities = sqliteTable('identities', {
  provider: text('provider').notNull(),
  subject: text('subject').notNull(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  email: text('email'),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull()
}, (table) => [
  uniqueIndex('identities_provider_subject_unique').on(table.provider, table.subject),
  uniqueIndex('identities_user_provider_unique').on(table.userId, table.provider)
])

/**
 * The models of the OAuth 2.1 / OpenID provider (oidc-provider's adapter, db/store/oauth.ts), one row
 * each by kind and id: the payload is oidc-provider's JSON, the columns beside it what the lookups
 * need. Listing is oldest first by insertion: the table's implicit rowid, which SQLite gives a new row
 * above every row present (an upsert that replaces a model keeps its row, and so its place).
 * No foreign key: account_id is oidc-provider's string, and a model may outlive its user until pruned.
 */
export const oauthModels = sqliteTable('oauth_models', {
  kind: text('kind').notNull(),
  id: text('id').notNull(),
  /** oidc-provider's JSON (db/oauth-model-rows.ts). */
  payload: text('payload').notNull(),
  grantId: text('grant_id'),
  userCode: text('user_code'),
  uid: text('uid'),
  accountId: text('account_id'),
  /** Null: never expires (a client). */
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }),
  consumedAt: integer('consumed_at', { mode: 'timestamp_ms' })
}, (table) => [
  primaryKey({ columns: [table.kind, table.id] }),
  // Partial: most kinds leave these columns null (a client-credentials token's status row leaves all four), and a row
  // in none of them is written to three B-trees (the table, its key, expires_at), not seven: half of that row's insert
  // (issue 34). Each lookup is by equality, which implies the column is not null: SQLite and PostgreSQL still use them.
  index('oauth_models_grant_idx').on(table.grantId).where(sql`${table.grantId} is not null`),
  index('oauth_models_user_code_idx').on(table.kind, table.userCode).where(sql`${table.userCode} is not null`),
  index('oauth_models_uid_idx').on(table.kind, table.uid).where(sql`${table.uid} is not null`),
  index('oauth_models_account_idx').on(table.kind, table.accountId).where(sql`${table.accountId} is not null`),
  index('oauth_models_expires_idx').on(table.expiresAt)
])

/**
 * The webhook outbox (core/webhooks/): each event written as it happens, then POSTed, signed, by a
 * worker, with retries, like mail_outbox. message_id is the `webhook-id` header, the same on every attempt.
 */
export const webhookOutbox = sqliteTable('webhook_outbox', {
  messageId: text('message_id').notNull(),
  type: text('type').notNull(),
  payload: text('payload').notNull(),
  ...outboxColumns('delivered')
}, (table) => [
  uniqueIndex('webhook_outbox_message_id_unique').on(table.messageId),
  index('webhook_outbox_due_idx').on(table.status, table.nextAttemptAt),
  index('webhook_outbox_finished_idx').on(table.finishedAt)
])

/** Organisations (docs/organisations.md): a customer or team whose members the users are. */
export const organizations = sqliteTable('organizations', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  slug: text('slug').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull()
}, (table) => [
  uniqueIndex('organizations_slug_unique').on(table.slug)
])

/** A user's membership of an organisation, with its role; it goes with the user or the organisation. */
export const memberships = sqliteTable('memberships', {
  orgId: integer('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  role: text('role', { enum: ['owner', 'admin', 'member'] }).notNull(),
  joinedAt: integer('joined_at', { mode: 'timestamp_ms' }).notNull()
}, (table) => [
  primaryKey({ columns: [table.orgId, table.userId] }),
  index('memberships_user_idx').on(table.userId)
])

/** Mailed invitations to an organisation, stored as the SHA-256 of their token. */
export const orgInvitations = sqliteTable('org_invitations', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  orgId: integer('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  email: text('email').notNull(),
  role: text('role', { enum: ['owner', 'admin', 'member'] }).notNull(),
  tokenHash: text('token_hash').notNull(),
  /** Who invited; the invitation outlives that user. */
  invitedBy: integer('invited_by').references(() => users.id, { onDelete: 'set null' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  usedAt: integer('used_at', { mode: 'timestamp_ms' }),
  withdrawnAt: integer('withdrawn_at', { mode: 'timestamp_ms' })
}, (table) => [
  uniqueIndex('org_invitations_token_hash_unique').on(table.tokenHash),
  index('org_invitations_org_idx').on(table.orgId, table.createdAt),
  index('org_invitations_expires_idx').on(table.expiresAt)
])

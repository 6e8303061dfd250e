import { sql } from 'drizzle-orm'
import { bigint, boolean, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { ONE_TIME_TOKEN_PURPOSES } from '../store/one-time-tokens.js'

// The same tables as db/sqlite/schema.ts, in PostgreSQL's types. Unqualified names: the tables
// live in the connection's search_path (public by default), so one database can hold several.
const moment = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

export const users = pgTable('users', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  firstName: text('first_name').notNull(),
  lastName: text('last_name').notNull(),
  username: text('username'),
  email: text('email').notNull(),
  /** Null for an account made by signing in with an OpenID provider: no password login until one is set (forgot-password). */
  passwordHash: text('password_hash'),
  emailVerified: boolean('email_verified').notNull().default(false),
  emailVerifiedAt: moment('email_verified_at'),
  createdAt: moment('created_at').notNull(),
  updatedAt: moment('updated_at').notNull(),
  /** 'user' or 'admin' (the admin API, /admin). */
  role: text('role', { enum: ['user', 'admin'] }).notNull().default('user'),
  /** Set while an operator has disabled the account: no login, refresh or provider sign-in. */
  disabledAt: moment('disabled_at'),
  /** Written with the session of each successful login. */
  lastLoginAt: moment('last_login_at')
}, (table) => [
  uniqueIndex('users_email_unique').on(table.email),
  // Usernames are unique ignoring case; null (header-variant users) never collides.
  uniqueIndex('users_username_lower_unique').on(sql`lower(${table.username})`)
])

export const refreshTokens = pgTable('refresh_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  familyId: text('family_id').notNull(),
  createdAt: moment('created_at').notNull(),
  expiresAt: moment('expires_at').notNull(),
  rotatedAt: moment('rotated_at'),
  replacedBy: text('replaced_by'),
  revokedAt: moment('revoked_at')
}, (table) => [
  index('refresh_tokens_family_idx').on(table.familyId),
  index('refresh_tokens_user_idx').on(table.userId)
])

/** Session metadata for GET /auth/sessions; the id is the refresh-token family id. Revocation stays on refresh_tokens. */
export const sessions = pgTable('sessions', {
  id: text('id').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  createdAt: moment('created_at').notNull(),
  lastUsedAt: moment('last_used_at').notNull(),
  userAgent: text('user_agent'),
  ip: text('ip'),
  /** When the user last proved the password in this session (login, re-authentication); a refresh does not renew it. */
  authenticatedAt: moment('authenticated_at').notNull().default(sql`to_timestamp(0)`),
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
export const oneTimeTokens = pgTable('one_time_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  purpose: text('purpose', { enum: ONE_TIME_TOKEN_PURPOSES }).notNull(),
  /** The address a verification link was sent to: it verifies only that address. */
  email: text('email').notNull(),
  createdAt: moment('created_at').notNull(),
  expiresAt: moment('expires_at').notNull(),
  usedAt: moment('used_at')
}, (table) => [
  index('one_time_tokens_user_purpose_idx').on(table.userId, table.purpose)
])

/**
 * The 6-digit sign-in codes mailed by POST /auth/email-code, as a keyed hash of the code and its address. One
 * live code per address: a new one voids the older. `attempts` counts the guesses reserved against it; at the
 * cap (five) it is burnt. Keyed by the address, not a user: a code mailed to an unknown address signs it up.
 */
export const emailCodes = pgTable('email_codes', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  email: text('email').notNull(),
  codeHash: text('code_hash').notNull(),
  createdAt: moment('created_at').notNull(),
  expiresAt: moment('expires_at').notNull(),
  /** When it was used, or voided by a newer code. */
  usedAt: moment('used_at'),
  attempts: integer('attempts').notNull().default(0)
}, (table) => [
  index('email_codes_email_created_idx').on(table.email, table.createdAt),
  index('email_codes_expires_idx').on(table.expiresAt)
])

export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  algorithm: text('algorithm', { enum: ['EdDSA', 'ES256', 'RS256'] }).notNull(),
  publicKeyPem: text('public_key_pem').notNull(),
  /** PKCS#8 PEM, or its sealed form with SIGNING_KEY_ENCRYPTION_KEY; null once the key is retired. */
  privateKeyPem: text('private_key_pem'),
  createdAt: moment('created_at').notNull()
})

/** Security events (logins, failures, lockouts, changes): what GET /auth/security-events shows a user of its account. */
export const securityEvents = pgTable('security_events', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  type: text('type').notNull(),
  /** Null for a failed login of an unknown email. */
  userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
  sessionId: text('session_id'),
  ip: text('ip'),
  userAgent: text('user_agent'),
  requestId: text('request_id'),
  /** JSON with what else the event tells (a login's method, the old email address). */
  detail: text('detail'),
  createdAt: moment('created_at').notNull(),
  /** The admin who acted (admin API, CLI); null for the user's own events. The row outlives that admin. */
  actorId: integer('actor_id').references(() => users.id, { onDelete: 'set null' })
}, (table) => [
  index('security_events_user_idx').on(table.userId, table.id),
  index('security_events_created_idx').on(table.createdAt),
  index('security_events_type_idx').on(table.type, table.id)
])

/** The session's index in the Token Status List (issue 14), drawn at random (issue 21); see db/sqlite/schema.ts. */
export const sessionStatusIndexes = pgTable('session_status_indexes', {
  statusIndex: integer('status_index').primaryKey(),
  sessionId: text('session_id').notNull().references(() => sessions.id, { onDelete: 'cascade' })
}, (table) => [
  uniqueIndex('session_status_indexes_session_unique').on(table.sessionId)
])

/**
 * The revocation log: one row per revoked session, written in the revoking transaction; every
 * instance follows it (`seq > cursor`). No foreign keys: a row must outlive the deleted user it tells of.
 */
export const revocations = pgTable('revocations', {
  seq: bigint('seq', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  /** The revoked session; null in a user-change row (a user's shown fields changed, or the user was deleted: triggers in migration 0014). */
  sessionId: text('session_id'),
  userId: integer('user_id').notNull(),
  statusIndex: integer('status_index'),
  /** The session ended because its user was deleted: its tokens get 404 USER_NOT_FOUND. */
  userDeleted: boolean('user_deleted').notNull().default(false),
  revokedAt: moment('revoked_at').notNull()
}, (table) => [
  index('revocations_revoked_at_idx').on(table.revokedAt),
  index('revocations_status_index_idx').on(table.statusIndex)
])

/** Settings the service decides for itself and every instance shares (the calibrated password-hash parameters), by name. */
export const settings = pgTable('settings', {
  name: text('name').primaryKey(),
  value: text('value').notNull()
})

/** Passkeys (WebAuthn credentials) of a user; see db/sqlite/schema.ts. The counter is a uint32: bigint. */
export const passkeys = pgTable('passkeys', {
  id: text('id').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  credentialId: text('credential_id').notNull(),
  publicKey: text('public_key').notNull(),
  counter: bigint('counter', { mode: 'number' }).notNull(),
  transports: text('transports').notNull().default(''),
  name: text('name').notNull(),
  createdAt: moment('created_at').notNull(),
  lastUsedAt: moment('last_used_at')
}, (table) => [
  uniqueIndex('passkeys_credential_id_unique').on(table.credentialId),
  index('passkeys_user_idx').on(table.userId)
])

/** WebAuthn challenges waiting for their answer, by the SHA-256 of the challenge; see db/sqlite/schema.ts. */
export const webauthnChallenges = pgTable('webauthn_challenges', {
  challengeHash: text('challenge_hash').primaryKey(),
  purpose: text('purpose', { enum: ['registration', 'authentication'] }).notNull(),
  userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
  createdAt: moment('created_at').notNull(),
  expiresAt: moment('expires_at').notNull()
}, (table) => [
  index('webauthn_challenges_expires_idx').on(table.expiresAt)
])

/**
 * A user's TOTP secret (RFC 6238), sealed with SIGNING_KEY_ENCRYPTION_KEY when it is set; inactive
 * until confirmed. `last_used_step`: the time step of the last code accepted (replay refusal).
 */
export const totpCredentials = pgTable('totp_credentials', {
  userId: integer('user_id').primaryKey().references(() => users.id, { onDelete: 'cascade' }),
  secret: text('secret').notNull(),
  createdAt: moment('created_at').notNull(),
  confirmedAt: moment('confirmed_at'),
  lastUsedStep: bigint('last_used_step', { mode: 'number' }),
  /** Wrong codes since the last accepted one: at MFA_MAX_WRONG_CODES the second factor refuses every code until a password reset. */
  failedCodes: integer('failed_codes').notNull().default(0)
})

/** Single-use recovery codes of a user with TOTP, stored only as hashes; a new set replaces the old. */
export const recoveryCodes = pgTable('recovery_codes', {
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  codeHash: text('code_hash').notNull(),
  createdAt: moment('created_at').notNull(),
  usedAt: moment('used_at')
}, (table) => [
  primaryKey({ columns: [table.userId, table.codeHash] })
])

/** The second step of a login of an account with TOTP: the mfa_token's hash, single use, void after too many failures. */
export const mfaChallenges = pgTable('mfa_challenges', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  createdAt: moment('created_at').notNull(),
  expiresAt: moment('expires_at').notNull(),
  failures: integer('failures').notNull().default(0),
  usedAt: moment('used_at')
}, (table) => [
  index('mfa_challenges_user_idx').on(table.userId)
])

/**
 * The columns every outbox has (mail_outbox, webhook_outbox), beside what it sends: one worker
 * (core/outbox/outbox-worker.ts) claims, retries and finishes the rows of both, through one set of
 * queries (db/postgres/outbox-queue.ts). `done` is the status of a row that reached its receiver.
 */
function outboxColumns<Done extends string> (done: Done) {
  return {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    status: text('status', { enum: ['pending', done, 'failed'] }).notNull().default('pending'),
    /** Attempts so far, counted when a worker claims the row (a crash mid-send counts too). */
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: moment('next_attempt_at').notNull(),
    /** A worker is sending it until then; past it, another may (the first one died). */
    claimedUntil: moment('claimed_until'),
    lastError: text('last_error'),
    createdAt: moment('created_at').notNull(),
    /** When it was sent or given up. */
    finishedAt: moment('finished_at')
  }
}

/**
 * The mail outbox (plugins/app/mailer.ts): every mail is written here first, a reset or verification
 * mail in the transaction that makes its token, and a worker sends it with retries. Instances claim
 * rows with FOR UPDATE SKIP LOCKED and a lease (claimed_until), so no two send one mail. The body,
 * which may hold a link's token, is erased once the mail is sent or given up; finished rows are pruned.
 * No foreign key: a notice to a previous address tells of no current user.
 */
export const mailOutbox = pgTable('mail_outbox', {
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
export const identities = pgTable('identities', {
  provider: text('provider').notNull(),
  subject: text('subject').notNull(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  email: text('email'),
  createdAt: moment('created_at').notNull()
}, (table) => [
  uniqueIndex('identities_provider_subject_unique').on(table.provider, table.subject),
  uniqueIndex('identities_user_provider_unique').on(table.userId, table.provider)
])

/**
 * The models of the OAuth 2.1 / OpenID provider (oidc-provider's adapter, db/store/oauth.ts), one row
 * each by kind and id: the payload is oidc-provider's JSON, the columns beside it what the lookups
 * need. `seq` orders a listing by insertion (an upsert that replaces a model keeps it). No foreign
 * key: account_id is oidc-provider's string, and a model may outlive its user until pruned.
 */
export const oauthModels = pgTable('oauth_models', {
  kind: text('kind').notNull(),
  id: text('id').notNull(),
  /** oidc-provider's JSON, as text (db/oauth-model-rows.ts): jsonb would refuse a string holding \u0000, which a dynamically registered client's name may. */
  payload: text('payload').notNull(),
  grantId: text('grant_id'),
  userCode: text('user_code'),
  uid: text('uid'),
  accountId: text('account_id'),
  /** Null: never expires (a client). */
  expiresAt: moment('expires_at'),
  consumedAt: moment('consumed_at'),
  seq: bigint('seq', { mode: 'number' }).notNull().generatedAlwaysAsIdentity()
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
export const webhookOutbox = pgTable('webhook_outbox', {
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
export const organizations = pgTable('organizations', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  name: text('name').notNull(),
  slug: text('slug').notNull(),
  createdAt: moment('created_at').notNull(),
  updatedAt: moment('updated_at').notNull()
}, (table) => [
  uniqueIndex('organizations_slug_unique').on(table.slug)
])

/** A user's membership of an organisation, with its role; it goes with the user or the organisation. */
export const memberships = pgTable('memberships', {
  orgId: integer('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  role: text('role', { enum: ['owner', 'admin', 'member'] }).notNull(),
  joinedAt: moment('joined_at').notNull()
}, (table) => [
  primaryKey({ columns: [table.orgId, table.userId] }),
  index('memberships_user_idx').on(table.userId)
])

/** Mailed invitations to an organisation, stored as the SHA-256 of their token. */
export const orgInvitations = pgTable('org_invitations', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  orgId: integer('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  email: text('email').notNull(),
  role: text('role', { enum: ['owner', 'admin', 'member'] }).notNull(),
  tokenHash: text('token_hash').notNull(),
  /** Who invited; the invitation outlives that user. */
  invitedBy: integer('invited_by').references(() => users.id, { onDelete: 'set null' }),
  createdAt: moment('created_at').notNull(),
  expiresAt: moment('expires_at').notNull(),
  usedAt: moment('used_at'),
  withdrawnAt: moment('withdrawn_at')
}, (table) => [
  uniqueIndex('org_invitations_token_hash_unique').on(table.tokenHash),
  index('org_invitations_org_idx').on(table.orgId, table.createdAt),
  index('org_invitations_expires_idx').on(table.expiresAt)
])

import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const users = sqliteTable('users', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  firstName: text('first_name').notNull(),
  lastName: text('last_name').notNull(),
  username: text('username'),
  email: text('email').notNull(),
  passwordHash: text('password_hash').notNull(),
  emailVerified: integer('email_verified', { mode: 'boolean' }).notNull().default(false),
  emailVerifiedAt: integer('email_verified_at', { mode: 'timestamp_ms' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull()
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
  ip: text('ip')
}, (table) => [
  index('sessions_user_idx').on(table.userId)
])

/** Password-reset and email-verification tokens: only their SHA-256 hash is kept. */
export const oneTimeTokens = sqliteTable('one_time_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  purpose: text('purpose', { enum: ['reset_password', 'verify_email'] }).notNull(),
  /** The address a verification link was sent to: it verifies only that address. */
  email: text('email').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  usedAt: integer('used_at', { mode: 'timestamp_ms' })
}, (table) => [
  index('one_time_tokens_user_purpose_idx').on(table.userId, table.purpose)
])

export const signingKeys = sqliteTable('signing_keys', {
  kid: text('kid').primaryKey(),
  algorithm: text('algorithm', { enum: ['EdDSA', 'ES256'] }).notNull(),
  publicKeyPem: text('public_key_pem').notNull(),
  privateKeyPem: text('private_key_pem').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull()
})

import { sql } from 'drizzle-orm'
import { boolean, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

// The same tables as db/sqlite/schema.ts, in PostgreSQL's types. Unqualified names: the tables
// live in the connection's search_path (public by default), so one database can hold several.
const moment = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

export const users = pgTable('users', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  firstName: text('first_name').notNull(),
  lastName: text('last_name').notNull(),
  username: text('username'),
  email: text('email').notNull(),
  passwordHash: text('password_hash').notNull(),
  emailVerified: boolean('email_verified').notNull().default(false),
  emailVerifiedAt: moment('email_verified_at'),
  createdAt: moment('created_at').notNull(),
  updatedAt: moment('updated_at').notNull()
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
  ip: text('ip')
}, (table) => [
  index('sessions_user_idx').on(table.userId)
])

/** Password-reset and email-verification tokens: only their SHA-256 hash is kept. */
export const oneTimeTokens = pgTable('one_time_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  purpose: text('purpose', { enum: ['reset_password', 'verify_email'] }).notNull(),
  /** The address a verification link was sent to: it verifies only that address. */
  email: text('email').notNull(),
  createdAt: moment('created_at').notNull(),
  expiresAt: moment('expires_at').notNull(),
  usedAt: moment('used_at')
}, (table) => [
  index('one_time_tokens_user_purpose_idx').on(table.userId, table.purpose)
])

export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  algorithm: text('algorithm', { enum: ['EdDSA', 'ES256'] }).notNull(),
  publicKeyPem: text('public_key_pem').notNull(),
  privateKeyPem: text('private_key_pem').notNull(),
  createdAt: moment('created_at').notNull()
})

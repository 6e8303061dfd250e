import { Type } from '@sinclair/typebox'
import { NO_CONTROL_CHARACTERS } from '../control-characters.js'

/*
 * Field rules, defined once. Strings are trimmed (and the email lower-cased)
 * before validation by normalizeUserFields, so these limits apply to the
 * stored value.
 */
/** No NUL character: PostgreSQL's text cannot hold one (the query would fail), so such input is refused as invalid on either backend. */
export const NO_NUL = '^[^\\u0000]*$'

/** The largest user id: PostgreSQL's `integer` column (SQLite's ids count up from 1 the same way). A larger one is 400, not the column's 500. */
export const MAX_ID = 2_147_483_647
export const Id = Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'Assigned by the service' })
/** The id of an event (a `bigint` column): past JavaScript's safe integers it would not be read back exactly. */
export const EventId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The id of the last event of the previous page' })
export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254, description: 'Trimmed and lower-cased; unique' })
/**
 * No control character either (core/control-characters.ts): C0 (NUL included, see NO_NUL), DEL, C1 and
 * the bidi controls would reach an operator's terminal or reorder what a page shows (issue 21, finding 10).
 */
export const Name = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: NO_CONTROL_CHARACTERS,
  description: '1 to 100 characters after trimming; no control characters (C0, DEL, C1, bidirectional controls such as U+202E)'
})
export const Username = Type.String({
  minLength: 3,
  maxLength: 32,
  pattern: '^[A-Za-z0-9_.-]+$',
  description: '3 to 32 of A-Z a-z 0-9 _ . -; unique ignoring case'
})
/** NIST SP 800-63B, 5.1.1.2: at least 8 characters, and room for passphrases (core/password-policy.ts checks the same limits). */
export const PASSWORD_MIN_LENGTH = 8
export const PASSWORD_MAX_LENGTH = 256

export const Password = Type.String({
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  description: `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters; never returned`
})
export const Token = Type.String({ description: 'Opaque to clients' })

/** Trims the user fields of a body, and lower-cases its email, before the schema checks them. */
export function normalizeUserFields (body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return
  const fields = body as Record<string, unknown>
  for (const name of ['first_name', 'last_name', 'username', 'email']) {
    if (Object.hasOwn(fields, name) && typeof fields[name] === 'string') fields[name] = fields[name].trim()
  }
  if (typeof fields.email === 'string') fields.email = fields.email.toLowerCase()
}

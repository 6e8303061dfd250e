import { Type, type Static } from '@sinclair/typebox'
import { Email, Name, Username } from './common.js'

/**
 * One user of an import (`POST /admin/users/import`, `account-service users import`): the fields registration
 * takes, with the same rules (trimmed, the email lower-cased, then checked), and instead of a password the hash
 * another system stored (core/passwords/hash-formats.ts). Without one the account has no password, like an
 * account a provider made. Any other field is refused: a misspelt `passwordHash` must not import an account
 * without its password.
 */
export const ImportUser = Type.Object({
  email: Email,
  first_name: Name,
  last_name: Name,
  username: Type.Optional(Type.Union([Username, Type.Null()])),
  password_hash: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 1024 }), Type.Null()])),
  email_verified: Type.Optional(Type.Boolean())
}, { additionalProperties: false })
export type ImportUserType = Static<typeof ImportUser>

export const ImportSummary = Type.Object({
  imported: Type.Integer({ minimum: 0, description: 'Users written' }),
  skipped: Type.Array(Type.Object({
    line: Type.Integer({ minimum: 1, description: 'The line of the NDJSON body (or the position in the JSON array), from 1' }),
    reason: Type.String()
  }), { description: 'Each line not imported, in order, and why' })
})
export type ImportSummaryType = Static<typeof ImportSummary>

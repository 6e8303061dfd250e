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

/**
 * The skipped lines a summary lists, the first in line order; the others are only counted. A body of bad lines
 * kept whole answered 8 MB for 200,000 of them, and a large enough one exhausted the heap (issue 33, finding 12).
 */
export const IMPORT_SKIPPED_LISTED = 100
/** The longest reason listed: one can quote the body (`unknown field <a name as long as a line>`). */
export const IMPORT_REASON_MAX = 200
const LISTED = IMPORT_SKIPPED_LISTED

export const SkippedLine = Type.Object({
  line: Type.Integer({ minimum: 1, description: 'The line of the NDJSON body (or the position in the JSON array), from 1' }),
  reason: Type.String({ maxLength: IMPORT_REASON_MAX })
})

export const ImportSummary = Type.Object({
  imported: Type.Integer({ minimum: 0, description: 'Users written' }),
  skipped: Type.Array(SkippedLine, { maxItems: LISTED, description: `The first ${LISTED} lines not imported, in line order, and why` }),
  skipped_count: Type.Integer({ minimum: 0, description: 'Every line not imported, listed or not' }),
  skipped_truncated: Type.Boolean({ description: `true when more lines were skipped than the ${LISTED} listed` })
})
export type ImportSummaryType = Static<typeof ImportSummary>

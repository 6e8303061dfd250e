import type { ErrorObject } from 'ajv'
import type { ImportedUser, ImportOutcome, UsersStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import { PayloadTooLargeError, ValidationFailedError } from '../errors.js'
import { importRefusal } from '../passwords/hash-formats.js'
import { normalizeUserFields } from '../schemas/common.js'
import { IMPORT_REASON_MAX, IMPORT_SKIPPED_LISTED, ImportUser, type ImportSummaryType, type ImportUserType } from '../schemas/import.js'
import { compileBodySchema } from '../validation.js'

export type ImportSummary = ImportSummaryType
export { IMPORT_SKIPPED_LISTED }

export interface UserImport {
  /**
   * Users as NDJSON, one JSON object a line, read from `chunks` (a file's or a request's stream) as they come:
   * a batch is written while the next is read, so an import of any size holds one batch and one line at a time.
   * Blank lines are passed over. Throws 413 PAYLOAD_TOO_LARGE past `maxBytes` (the batches before stay written).
   */
  importNdjson (chunks: AsyncIterable<Uint8Array | string>, limits?: { maxBytes?: number }): Promise<ImportSummary>
  /** Users as a parsed JSON array; `line` is then an element's position, from 1. 400 VALIDATION_FAILED for anything but an array. */
  importArray (users: unknown): Promise<ImportSummary>
}

export interface UserImportOptions {
  /** Users written in one transaction (UsersStore.importUsers). */
  batchSize?: number
  /** The longest NDJSON line read; a longer one is skipped without being held. */
  maxLineBytes?: number
}

export interface UserImportDependencies {
  store: Pick<UsersStore, 'importUsers'>
  clock: Clock
}

/** One line (or element) read: its value, or why it was not read. */
type Entry = { line: number, value: unknown } | { line: number, reason: string }

export const IMPORT_BATCH_SIZE = 500
export const IMPORT_MAX_LINE_BYTES = 64 * 1024

const shortened = (reason: string) => reason.length <= IMPORT_REASON_MAX ? reason : `${reason.slice(0, IMPORT_REASON_MAX - 1)}…`

const REASONS: Record<Exclude<ImportOutcome, 'imported'>, string> = {
  email_taken: 'email already registered',
  username_taken: 'username already taken'
}

/**
 * Brings users from another system with their password hashes (bcrypt, Argon2, scrypt, PBKDF2: checked at
 * their first login, then replaced by Argon2id, core/authentication/authentication.ts). A bad line never ends
 * the import: it is skipped with its line number and a reason, and so is a user whose email or username is
 * taken (by an account before, or a line before), so an import run twice imports nothing the second time.
 * Every skipped line is counted; the summary lists the first IMPORT_SKIPPED_LISTED.
 */
export function createUserImport ({ store, clock }: UserImportDependencies, options: UserImportOptions = {}): UserImport {
  const batchSize = options.batchSize ?? IMPORT_BATCH_SIZE
  const maxLineBytes = options.maxLineBytes ?? IMPORT_MAX_LINE_BYTES
  const validate = compileBodySchema(ImportUser)

  /** The user a value describes, or why it describes none. */
  function read (value: unknown): ImportedUser | string {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object'
    const fields = { ...value } as Record<string, unknown>
    normalizeUserFields(fields)
    if (!validate(fields)) return describe(validate.errors?.[0])
    const user = fields as ImportUserType
    const passwordHash = user.password_hash ?? null
    if (passwordHash !== null) {
      const refusal = importRefusal(passwordHash)
      if (refusal !== undefined) return refusal
    }
    return {
      email: user.email,
      firstName: user.first_name,
      lastName: user.last_name,
      username: user.username ?? null,
      passwordHash,
      emailVerified: user.email_verified ?? false
    }
  }

  async function importEntries (entries: AsyncIterable<Entry> | Iterable<Entry>): Promise<ImportSummary> {
    let imported = 0
    let skippedCount = 0
    // Lines of a later batch can be skipped before an earlier line's batch is written: the first ones by line
    // number are kept by sorting now and then and dropping the tail, so at most twice the listed number is held.
    let listed: ImportSummary['skipped'] = []
    const firstListed = () => listed.sort((a, b) => a.line - b.line).slice(0, IMPORT_SKIPPED_LISTED)
    const skip = (line: number, reason: string) => {
      skippedCount++
      listed.push({ line, reason: shortened(reason) })
      if (listed.length >= 2 * IMPORT_SKIPPED_LISTED) listed = firstListed()
    }
    let batch: Array<{ line: number, user: ImportedUser }> = []
    const flush = async () => {
      if (batch.length === 0) return
      const outcomes = await store.importUsers(batch.map(({ user }) => user), currentDate(clock))
      outcomes.forEach((outcome, index) => {
        if (outcome === 'imported') imported++
        else skip(batch[index].line, REASONS[outcome])
      })
      batch = []
    }
    for await (const entry of entries) {
      const user = 'reason' in entry ? entry.reason : read(entry.value)
      if (typeof user === 'string') {
        skip(entry.line, user)
        continue
      }
      batch.push({ line: entry.line, user })
      if (batch.length >= batchSize) await flush()
    }
    await flush()
    return { imported, skipped: firstListed(), skipped_count: skippedCount, skipped_truncated: skippedCount > IMPORT_SKIPPED_LISTED }
  }

  return {
    importNdjson: async (chunks, { maxBytes = Infinity } = {}) => await importEntries(ndjsonEntries(splitLines(chunks, { maxLineBytes, maxBytes }))),
    async importArray (users) {
      if (!Array.isArray(users)) throw new ValidationFailedError('an import is a JSON array of users, or NDJSON')
      return await importEntries(users.map((value: unknown, index) => ({ line: index + 1, value })))
    }
  }
}

/** The first validation error in words: `missing first_name`, `unknown field password`, `email: must match format "email"`. */
function describe (error: ErrorObject | undefined): string {
  if (error === undefined) return 'invalid'
  if (error.keyword === 'required') return `missing ${(error.params as { missingProperty: string }).missingProperty}`
  if (error.keyword === 'additionalProperties') return `unknown field ${(error.params as { additionalProperty: string }).additionalProperty}`
  const field = error.instancePath.replace(/^\//, '')
  // A pattern is no help to read (the names' is a list of control characters).
  const message = error.keyword === 'pattern' ? 'holds characters that are not allowed' : error.message ?? 'invalid'
  return field === '' ? message : `${field}: ${message}`
}

type Line = { line: number, text: string } | { line: number, tooLong: true }

/** Each NDJSON line parsed, blank ones passed over. */
async function * ndjsonEntries (lines: AsyncIterable<Line>): AsyncIterable<Entry> {
  for await (const item of lines) {
    if (!('text' in item)) {
      yield { line: item.line, reason: 'line too long' }
      continue
    }
    const text = item.line === 1 ? item.text.replace(/^\uFEFF/, '') : item.text
    if (text.trim() === '') continue
    try {
      yield { line: item.line, value: JSON.parse(text) }
    } catch {
      yield { line: item.line, reason: 'invalid JSON' }
    }
  }
}

/**
 * The lines of a byte stream (`\n` or `\r\n`), numbered from 1, holding at most one line of `maxLineBytes`:
 * a longer one is dropped as it comes and answered as too long. A `\n` byte never occurs inside a multi-byte
 * UTF-8 character, so each line is cut from the bytes before it is decoded.
 */
export async function * splitLines (chunks: AsyncIterable<Uint8Array | string>, { maxLineBytes, maxBytes = Infinity }: { maxLineBytes: number, maxBytes?: number }): AsyncIterable<Line> {
  let pending: Buffer[] = []
  let pendingBytes = 0
  let tooLong = false
  let number = 0
  let total = 0
  const take = (piece: Buffer): Line => {
    number++
    const line: Line = tooLong || pendingBytes + piece.length > maxLineBytes
      ? { line: number, tooLong: true }
      : { line: number, text: Buffer.concat([...pending, piece]).toString('utf8').replace(/\r$/, '') }
    pending = []
    pendingBytes = 0
    tooLong = false
    return line
  }
  for await (const chunk of chunks) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    total += bytes.length
    if (total > maxBytes) throw new PayloadTooLargeError()
    let start = 0
    for (let end = bytes.indexOf(10, start); end !== -1; end = bytes.indexOf(10, start)) {
      yield take(bytes.subarray(start, end))
      start = end + 1
    }
    const rest = bytes.subarray(start)
    if (tooLong || rest.length === 0) continue
    if (pendingBytes + rest.length > maxLineBytes) {
      tooLong = true
      pending = []
      pendingBytes = 0
    } else {
      // A copy: the rest of a line must not keep the whole chunk alive.
      pending.push(Buffer.from(rest))
      pendingBytes += rest.length
    }
  }
  if (pendingBytes > 0 || tooLong) yield take(Buffer.alloc(0))
}

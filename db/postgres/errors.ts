import pg from 'pg'
import { describeDatabase } from '../database-url.js'
import { DuplicateValueError, DuplicateSlugError, StoreUnavailableError } from '../store.js'

// The unique indexes of db/postgres/schema.ts, by the field a client is told about.
const UNIQUE_FIELDS: Record<string, 'email' | 'username'> = {
  users_email_unique: 'email',
  users_username_lower_unique: 'username'
}

// SQLSTATEs that mean "not now" rather than "never": the request gets 503 and may be retried.
// 08: connection exception; 53: insufficient resources (53300 too many connections); 57P01-03:
// server shutting down or starting; 57014: statement timeout; 40001/40P01: serialization failure,
// deadlock; 55P03: lock not available; 25006: read-only (a standby after a failover).
const UNAVAILABLE_STATES = /^(08|53|57P0[123]$|57014$|40001$|40P01$|55P03$|25006$)/

// The network said no: the server is down, restarting or unreachable.
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED'])

// node-postgres reports a lost or absent connection as a plain Error with one of these messages.
const DRIVER_CONNECTION_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error and is not queryable|Client was closed and is not queryable/

/** PostgreSQL's and node-postgres's errors as the store's: 409 material, 503 material, or as they are. */
export function translatePostgresError (error: unknown): unknown {
  // Drizzle wraps the driver's error in DrizzleQueryError; the cause chain holds the original.
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof pg.DatabaseError) {
      const field = current.code === '23505' ? UNIQUE_FIELDS[current.constraint ?? ''] : undefined
      if (field !== undefined) return new DuplicateValueError(field)
      if (current.code === '23505' && current.constraint === 'organizations_slug_unique') return new DuplicateSlugError()
      if (UNAVAILABLE_STATES.test(current.code ?? '')) return new StoreUnavailableError({ cause: error })
      return error
    }
    if (isConnectionFailure(current)) return new StoreUnavailableError({ cause: error })
  }
  return error
}

function isConnectionFailure (error: Error): boolean {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true
  // Node reports a refused connection to a host with several addresses as an AggregateError.
  if (error instanceof AggregateError) return error.errors.some(inner => inner instanceof Error && isConnectionFailure(inner))
  return DRIVER_CONNECTION_MESSAGES.test(error.message)
}

/**
 * A failure to open the store, as one line naming the database (without its password):
 * unreachable at start, wrong credentials, no such database.
 */
export function describeStartError (error: unknown, databaseUrl: string): Error {
  const reason = error instanceof AggregateError ? error.errors.map(inner => (inner as Error).message).join('; ') : (error as Error).message
  return new Error(`cannot open the PostgreSQL store at ${describeDatabase(databaseUrl)}: ${reason}`, { cause: error })
}

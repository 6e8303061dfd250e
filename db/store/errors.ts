/** A unique value (email or username) is already held by another user. */
export class DuplicateValueError extends Error {
  readonly field: 'email' | 'username'

  constructor (field: 'email' | 'username') {
    super(`${field} already taken`)
    this.field = field
    this.name = 'DuplicateValueError'
  }
}

/** Another organisation has the slug (the API answers 409 SLUG_TAKEN). */
export class DuplicateSlugError extends Error {
  constructor () {
    super('slug already taken')
    this.name = 'DuplicateSlugError'
  }
}

/** Another request linked the same provider account first (a race of two sign-ins). */
export class IdentityTakenError extends Error {
  constructor () {
    super('identity already linked')
    this.name = 'IdentityTakenError'
  }
}

/**
 * The store cannot answer now (locked, busy, read-only, full, unreachable); the request may be retried.
 * The one error for it: its code and status are what the client gets (503 STORE_UNAVAILABLE, with
 * Retry-After), the cause (the driver's error) only the log.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'STORE_UNAVAILABLE'
  readonly statusCode = 503
  constructor (options: { cause: unknown }) {
    super('The account store is unavailable; retry shortly', options)
    this.name = 'StoreUnavailableError'
  }
}

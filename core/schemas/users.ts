import { Type, type Static } from '@sinclair/typebox'
import type { UserRecord } from '../../db/store.js'
import type { Variant } from '../config.js'
import { Email, Id, Name, Username } from './common.js'

/** A user as the header variant shows it: no username. */
export const HeaderVariantUser = Type.Object({
  id: Id,
  first_name: Name,
  last_name: Name,
  email: Email
}, { additionalProperties: false })

/** A user as the cookie variant shows it; username is null for users registered through the header variant. */
export const CookieVariantUser = Type.Object({
  id: Id,
  first_name: Name,
  last_name: Name,
  username: Type.Union([Username, Type.Null()]),
  email: Email
}, { additionalProperties: false })

export const PublicUser = { header: HeaderVariantUser, cookie: CookieVariantUser } as const satisfies Record<Variant, unknown>
export type PublicUserBody = Static<typeof HeaderVariantUser> | Static<typeof CookieVariantUser>

/**
 * The interface's `/users/:userId`: any id a client may hold, so that one past the store's column (MAX_ID) is
 * still "another user's id" (403, the contract's answer) rather than a validation error. The guard compares
 * it with the token's own id before any read, so it never reaches the store.
 */
export const UserParams = Type.Object({ userId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: Id.description }) }, { additionalProperties: false })

/** PATCH body (cookie variant): any non-empty subset; anything else, password included, is refused. */
export const UpdateUserBody = Type.Object({
  first_name: Type.Optional(Name),
  last_name: Type.Optional(Name),
  username: Type.Optional(Username),
  email: Type.Optional(Email)
}, { additionalProperties: false, minProperties: 1 })

/** The fields of a stored user that a variant shows (what the user cache keeps: core/users/user-cache.ts). */
export type ShownUser = Pick<UserRecord, 'id' | 'firstName' | 'lastName' | 'email' | 'username'>

/** A stored user as the given variant shows it: never a password hash, username only in the cookie variant. */
export function presentUser (user: ShownUser, variant: Variant): PublicUserBody {
  // Two literals, no spread: this runs on every GET /users/:id, and copying an object by spread is the slower way.
  return variant === 'cookie'
    ? { id: user.id, first_name: user.firstName, last_name: user.lastName, username: user.username, email: user.email }
    : { id: user.id, first_name: user.firstName, last_name: user.lastName, email: user.email }
}

import { Type, type Static } from '@sinclair/typebox'
import type { IdentityRecord, PasskeyRecord, SecurityEventRecord, SessionRecord, UserRecord } from '../../db/store.js'
import { USER_ROLES } from '../../db/store.js'
import { NO_CONTROL_CHARACTERS } from '../control-characters.js'
import { SECURITY_EVENT_TYPES } from '../events/types.js'
import { Email, EventId, Id, Name, Username } from './common.js'

/** How many users or events a page holds by default, and at most. */
export const ADMIN_PAGE = 50
export const ADMIN_PAGE_MAX = 200

const DateTime = Type.String({ format: 'date-time' })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const Role = Type.Union(USER_ROLES.map(role => Type.Literal(role)), { description: '`user` or `admin`' })

/**
 * A user as the admin API shows it (and webhooks' `user.*` events carry it): never a password hash.
 * `username` is null for users of the header variant.
 */
export const AdminUser = Type.Object({
  id: Id,
  email: Email,
  first_name: Name,
  last_name: Name,
  username: Nullable(Username),
  role: Role,
  email_verified: Type.Boolean(),
  disabled: Type.Boolean(),
  created_at: DateTime,
  last_login_at: Nullable(DateTime)
}, { additionalProperties: false, title: 'AdminUser' })

export type AdminUserBody = Static<typeof AdminUser>

export function presentAdminUser (user: UserRecord): AdminUserBody {
  return {
    id: user.id,
    email: user.email,
    first_name: user.firstName,
    last_name: user.lastName,
    username: user.username,
    role: user.role,
    email_verified: user.emailVerified,
    disabled: user.disabledAt !== null,
    created_at: user.createdAt.toISOString(),
    last_login_at: user.lastLoginAt?.toISOString() ?? null
  }
}

export const AdminUsersQuery = Type.Object({
  // No control character: no email, name or username holds one, and PostgreSQL's text cannot hold a NUL (a 500 before).
  query: Type.Optional(Type.String({ maxLength: 254, pattern: NO_CONTROL_CHARACTERS, description: 'Part of an email, a name or a username; case is ignored' })),
  limit: Type.Integer({ minimum: 1, maximum: ADMIN_PAGE_MAX, default: ADMIN_PAGE }),
  // At most MAX_ID, which the route checks (a pattern cannot say it simply).
  cursor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,9}$', description: 'The `next_cursor` of the previous page' }))
}, { additionalProperties: false })

export const AdminUsersResponse = Type.Object({
  users: Type.Array(AdminUser),
  next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page' }))
}, { additionalProperties: false })

export const AdminUserParams = Type.Object({ id: Id }, { additionalProperties: false })

const AdminSession = Type.Object({
  id: Type.String(),
  created_at: DateTime,
  last_used_at: DateTime,
  authenticated_at: DateTime,
  ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String())
}, { additionalProperties: false })

export const AdminUserDetails = Type.Object({
  ...AdminUser.properties,
  sessions: Type.Array(AdminSession, { description: 'Live sessions of logins (apps\' grants are `app_sessions`)' }),
  app_sessions: Type.Array(AdminSession, { description: 'Live grants of apps signed in through the OAuth provider (ids `oauth.<grant>`)' }),
  identities: Type.Array(Type.Object({ provider: Type.String(), email: Nullable(Type.String()), created_at: DateTime }, { additionalProperties: false })),
  second_factors: Type.Object({
    totp: Type.Boolean({ description: 'TOTP turned on' }),
    passkeys: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), created_at: DateTime, last_used_at: Nullable(DateTime) }, { additionalProperties: false }))
  }, { additionalProperties: false })
}, { additionalProperties: false })

const presentSession = (session: SessionRecord) => ({
  id: session.id,
  created_at: session.createdAt.toISOString(),
  last_used_at: session.lastUsedAt.toISOString(),
  authenticated_at: session.authenticatedAt.toISOString(),
  ip: session.ip,
  user_agent: session.userAgent
})

export function presentAdminUserDetails (details: {
  user: UserRecord, sessions: SessionRecord[], appSessions: SessionRecord[], identities: IdentityRecord[], totp: boolean, passkeys: PasskeyRecord[]
}): Static<typeof AdminUserDetails> {
  return {
    ...presentAdminUser(details.user),
    sessions: details.sessions.map(presentSession),
    app_sessions: details.appSessions.map(presentSession),
    identities: details.identities.map(identity => ({ provider: identity.provider, email: identity.email, created_at: identity.createdAt.toISOString() })),
    second_factors: {
      totp: details.totp,
      passkeys: details.passkeys.map(passkey => ({
        id: passkey.id, name: passkey.name, created_at: passkey.createdAt.toISOString(), last_used_at: passkey.lastUsedAt?.toISOString() ?? null
      }))
    }
  }
}

/** POST /admin/users: the account has no password until the invited user sets one (or a provider sign-in). */
export const NewAdminUserBody = {
  header: Type.Object({
    first_name: Name,
    last_name: Name,
    email: Email,
    role: Type.Optional(Role),
    invite: Type.Boolean({ default: false, description: 'Mail a set-password link (valid PASSWORD_RESET_TTL, opens /reset-password)' })
  }, { additionalProperties: false }),
  cookie: Type.Object({
    first_name: Name,
    last_name: Name,
    email: Email,
    username: Username,
    role: Type.Optional(Role),
    invite: Type.Boolean({ default: false, description: 'Mail a set-password link (valid PASSWORD_RESET_TTL, opens /reset-password)' })
  }, { additionalProperties: false })
} as const

export const AdminEventsQuery = Type.Object({
  user: Type.Optional(Id),
  type: Type.Optional(Type.Union(SECURITY_EVENT_TYPES.map(type => Type.Literal(type)))),
  before: Type.Optional(EventId),
  limit: Type.Integer({ minimum: 1, maximum: ADMIN_PAGE_MAX, default: ADMIN_PAGE })
}, { additionalProperties: false })

export const AdminEvent = Type.Object({
  id: Type.Integer({ description: 'Pass the last one as `before` for the next page' }),
  type: Type.Union(SECURITY_EVENT_TYPES.map(type => Type.Literal(type))),
  user_id: Nullable(Type.Integer({ description: 'Null for a failed login of an unknown email, and for admin_user_deleted (the id is in detail)' })),
  actor_id: Nullable(Type.Integer({ description: 'The admin who acted; null for the user\'s own events, from the CLI, or once that admin was deleted' })),
  session_id: Nullable(Type.String()),
  ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  request_id: Nullable(Type.String()),
  detail: Nullable(Type.Record(Type.String(), Type.Unknown())),
  created_at: DateTime
}, { additionalProperties: false })

export const AdminEventsResponse = Type.Object({ events: Type.Array(AdminEvent) }, { additionalProperties: false })

export function presentAdminEvent (event: SecurityEventRecord): Static<typeof AdminEvent> {
  return {
    id: event.id,
    type: event.type as Static<typeof AdminEvent>['type'],
    user_id: event.userId,
    actor_id: event.actorId,
    session_id: event.sessionId,
    ip: event.ip,
    user_agent: event.userAgent,
    request_id: event.requestId,
    detail: event.detail,
    created_at: event.createdAt.toISOString()
  }
}

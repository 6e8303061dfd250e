import type { AccountStore, NewSecurityEvent, UserRecord, UserRole } from '../../db/store.js'
import { LastAdminError, UserNotFoundError } from '../errors.js'
import type { Client } from '../events/types.js'
import type { Webhooks } from '../webhooks/webhooks.js'

/** The admin acting (its user id; null from the CLI on the host) and the request it acts through. */
export interface AdminActor {
  adminId: number | null
  client: Client
}

/** Whether `user` is an enabled admin and no other is. */
export async function isLastAdmin (store: Pick<AccountStore, 'countActiveAdmins'>, user: UserRecord): Promise<boolean> {
  return user.role === 'admin' && user.disabledAt === null && await store.countActiveAdmins() <= 1
}

/** The operator at the CLI (account-service): no admin account (actor_id null), the CLI as its client. */
export const CLI_OPERATOR: AdminActor = { adminId: null, client: { ip: null, userAgent: 'account-service CLI', requestId: null } }

/** The audit row of a role change: `role_changed`, with the acting admin (null from the CLI). */
export function roleChangedEvent (userId: number, from: UserRole, to: UserRole, actor: AdminActor, now: Date): NewSecurityEvent {
  const { ip, userAgent, requestId } = actor.client
  return { type: 'role_changed', userId, actorId: actor.adminId, sessionId: null, ip, userAgent, requestId, detail: { user_id: userId, from, to }, createdAt: now }
}

export interface RoleChangeDependencies {
  store: Pick<AccountStore, 'findUserById' | 'setUserRole' | 'countActiveAdmins'>
  /** user.updated: the user as changed, written in the change's transaction. */
  webhooks: Pick<Webhooks, 'userEvent' | 'wake'>
}

/**
 * Sets a user's role, and records `role_changed` and sends `user.updated` in the same transaction (all or none),
 * as the admin API's other acts do. The one rule of a role change (Admin.changeRole: the CLI's `users set-role`,
 * any later route). 404 USER_NOT_FOUND.
 */
export async function changeRole (
  { store, webhooks }: RoleChangeDependencies, userId: number, role: UserRole, actor: AdminActor, now: Date
): Promise<{ user: UserRecord, changed: boolean }> {
  const user = await store.findUserById(userId)
  if (user === undefined) throw new UserNotFoundError()
  // An admin demoting itself must leave another behind: else no one is left to use /admin (409 LAST_ADMIN).
  if (actor.adminId === userId && user.role === 'admin' && role !== 'admin' && await isLastAdmin(store, user)) throw new LastAdminError()
  const changed = user.role !== role
  if (!changed) return { user, changed }
  const audit = { event: roleChangedEvent(userId, user.role, role, actor, now) }
  if (!await store.setUserRole(userId, role, now, audit, webhooks.userEvent('user.updated'))) throw new UserNotFoundError()
  webhooks.wake()
  return { user: { ...user, role }, changed }
}

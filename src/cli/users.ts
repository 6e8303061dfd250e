import { createReadStream } from 'node:fs'
import { USER_ROLES, type AccountStore, type UserRecord, type UserRole } from '../../db/store.js'
import { CLI_OPERATOR } from '../../core/admin/roles.js'
import { visible } from '../../core/control-characters.js'
import { UserNotFoundError } from '../../core/errors.js'
import {
  asOperator, CommandError, expectPositionals, findUser, parseId, parsePositiveInteger, print, unknownCommand, UsageError,
  type CommandGroup, type Context, type Options, type Output
} from './command.js'
import { importUsers } from './import.js'

/** `users list|show|set-role|delete|import`: the accounts. A change goes through core/admin, with the operator as actor. */
export const users: CommandGroup = (positionals) => {
  const [, action, argument] = positionals
  switch (action) {
    case 'list':
      expectPositionals(positionals, 2, 'users list [--limit n] [--after id]')
      return listUsers
    case 'show':
      expectPositionals(positionals, 3, 'users show <id|email>')
      return async (store, options, out) => { const user = await findUser(store, argument); print(out, options, describeUser(user), formatUser(user)) }
    case 'set-role': {
      expectPositionals(positionals, 4, `users set-role <id|email> <${USER_ROLES.join('|')}>`)
      const role = positionals[3]
      if (!(USER_ROLES as readonly string[]).includes(role)) throw new UsageError(`unknown role ${role}; one of ${USER_ROLES.join(', ')}`)
      return async (store, options, out, context) => setRole(store, argument, role as UserRole, options, out, context)
    }
    case 'delete':
      expectPositionals(positionals, 3, 'users delete <id>')
      return async (store, options, out, context) => deleteUser(store, parseId(argument), options, out, context)
    case 'import':
      expectPositionals(positionals, 3, 'users import <file|->')
      return async (store, options, out, context) => importUsers(store, () => argument === '-' ? context.stdin : createReadStream(argument), options, out, context)
    default:
      throw unknownCommand(positionals)
  }
}

async function listUsers (store: AccountStore, options: Options, out: Output) {
  const limit = parsePositiveInteger(options.limit ?? '50', '--limit')
  const afterId = options.after === undefined ? undefined : parsePositiveInteger(options.after, '--after')
  const users = await store.listUsers({ limit, afterId })
  print(out, options, users.map(describeUser), users.length === 0 ? 'no users' : users.map(formatUser).join('\n'))
}

/** As the admin API's deletion: the audit row (admin_user_deleted, actor_id null) and the user.deleted webhook. */
async function deleteUser (store: AccountStore, id: number, options: Options, out: Output, context: Context) {
  try {
    await asOperator(store, context, ({ admin }) => admin.deleteUser(CLI_OPERATOR, id))
  } catch (error) {
    if (error instanceof UserNotFoundError) throw new CommandError(`no user with id ${id}`)
    throw error
  }
  print(out, options, { deleted: id }, `deleted user ${id} and their sessions`)
}

/** As the admin rules' role change: the audit row (role_changed, actor_id null) and the user.updated webhook with it. */
async function setRole (store: AccountStore, idOrEmail: string, role: UserRole, options: Options, out: Output, context: Context) {
  const user = await findUser(store, idOrEmail)
  const { changed } = await asOperator(store, context, ({ admin }) => admin.changeRole(CLI_OPERATOR, user.id, role))
  print(out, options, { userId: user.id, role, changed }, changed
    ? `user ${user.id} (${visible(user.email)}) is now ${role === 'admin' ? 'an admin' : 'a user'} (was ${user.role})`
    : `user ${user.id} (${visible(user.email)}) already had the role ${role}; nothing changed`)
}

/** A user without its password hash. */
function describeUser (user: UserRecord) {
  return {
    id: user.id,
    email: user.email,
    username: user.username,
    first_name: user.firstName,
    last_name: user.lastName,
    role: user.role,
    disabled: user.disabledAt !== null,
    created_at: user.createdAt.toISOString(),
    updated_at: user.updatedAt.toISOString(),
    last_login_at: user.lastLoginAt?.toISOString() ?? null
  }
}

/** One line: every value of the user's own shows its control characters escaped, a line break included. */
function formatUser (user: UserRecord): string {
  return visible(`${user.id}  ${user.email}  ${user.username ?? '-'}  ${user.firstName} ${user.lastName}  created ${user.createdAt.toISOString()}`)
}

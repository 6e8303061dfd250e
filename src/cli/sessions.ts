import type { AccountStore } from '../../db/store.js'
import { CLI_OPERATOR } from '../../core/admin/roles.js'
import { visible } from '../../core/control-characters.js'
import { asOperator, expectPositionals, findUser, print, unknownCommand, type CommandGroup, type Context, type Options, type Output } from './command.js'

/** `sessions revoke`: ends a user's sessions, as the admin API's "end sessions" does. */
export const sessions: CommandGroup = (positionals) => {
  if (positionals[1] !== 'revoke') throw unknownCommand(positionals)
  expectPositionals(positionals, 3, 'sessions revoke <id|email>')
  return async (store, options, out, context) => revokeSessions(store, positionals[2], options, out, context)
}

/** As the admin API's "end sessions": the audit row (admin_sessions_revoked) and the session.revoked webhook. */
async function revokeSessions (store: AccountStore, idOrEmail: string, options: Options, out: Output, context: Context) {
  const user = await findUser(store, idOrEmail)
  const revoked = await asOperator(store, context, ({ admin }) => admin.endSessions(CLI_OPERATOR, user.id))
  print(out, options, { userId: user.id, revoked }, `revoked ${revoked} session${revoked === 1 ? '' : 's'} of user ${user.id} (${visible(user.email)})`)
}

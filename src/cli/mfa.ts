import type { AccountStore } from '../../db/store.js'
import { CLI_OPERATOR } from '../../core/admin/roles.js'
import { visible } from '../../core/control-characters.js'
import { asOperator, expectPositionals, findUser, print, unknownCommand, type CommandGroup, type Context, type Options, type Output } from './command.js'

/** `mfa reset`: turns off a user's TOTP (support, for a lost authenticator), as the admin API's reset does. */
export const mfa: CommandGroup = (positionals) => {
  if (positionals[1] !== 'reset') throw unknownCommand(positionals)
  expectPositionals(positionals, 3, 'mfa reset <id|email>')
  return async (store, options, out, context) => resetMfa(store, positionals[2], options, out, context)
}

/** As the admin API's reset: the audit row (admin_mfa_reset), the mfa.changed webhook, and the owner's mail when TOTP was on. */
async function resetMfa (store: AccountStore, idOrEmail: string, options: Options, out: Output, context: Context) {
  const user = await findUser(store, idOrEmail)
  const { totpWasOn, removed } = await asOperator(store, context, ({ admin }) => admin.resetMfa(CLI_OPERATOR, user.id))
  print(out, options, { userId: user.id, reset: totpWasOn }, totpWasOn
    ? `turned off TOTP of user ${user.id} (${visible(user.email)}) and voided its recovery codes; the next login asks for the password only`
    : `user ${user.id} (${visible(user.email)}) had no TOTP turned on${removed ? ' (a setup not yet confirmed was removed)' : ''}; nothing to reset`)
}

import { describeDatabase } from '../../db/database-url.js'
import { expectPositionals, print, unknownCommand, type CommandGroup } from './command.js'

/** `migrate`: the runner opened the store, which applies its migrations; this says which store it was. */
export const migrate: CommandGroup = (positionals) => {
  if (positionals[1] !== undefined) throw unknownCommand(positionals)
  expectPositionals(positionals, 1, 'migrate')
  return async (_store, options, out, { databaseUrl }) => {
    // As the start log shows it: a PostgreSQL URL without its user, password and options.
    const database = describeDatabase(databaseUrl)
    print(out, options, { migrated: database }, `migrations applied to ${database}`)
  }
}

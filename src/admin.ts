import { parseArgs } from 'node:util'
import { StoreUnavailableError, type AccountStore } from '../db/store.js'
import { createSealer } from '../core/secrets/sealing.js'
import { VERSION_LINE } from '../core/version.js'
import { clients } from './cli/clients.js'
import { CommandError, printError, stderrLogger, unknownCommand, UsageError, type AdminIo, type Command, type CommandGroup, type Options, type Output } from './cli/command.js'
import { events } from './cli/events.js'
import { hash } from './cli/hash.js'
import { HELP } from './cli/help.js'
import { keys } from './cli/keys.js'
import { mfa } from './cli/mfa.js'
import { migrate } from './cli/migrate.js'
import { resources } from './cli/resources.js'
import { sessions } from './cli/sessions.js'
import { users } from './cli/users.js'

export type { AdminIo } from './cli/command.js'

/*
 * The admin CLI (`account-service <command>`), for the operator of one store: this file reads the command line,
 * opens the store and runs the command; each command group is a file of src/cli/ (users, clients, ...). A command
 * parses and prints: what it changes goes through the rules (core/), the admin rules with the operator as actor.
 * It opens the store named by DATABASE_URL (or --database) beside a running
 * service: SQLite's WAL lets both work on one file.
 * Exit codes: 0 done, 1 failed (not found, store error), 2 usage error.
 */

/** The command groups, by the command line's first word. */
const GROUPS = new Map<string, CommandGroup>([
  ['migrate', migrate],
  ['keys', keys],
  ['users', users],
  ['sessions', sessions],
  ['mfa', mfa],
  ['hash', hash],
  ['events', events],
  ['clients', clients],
  ['resources', resources]
])

const processIo: AdminIo = {
  out: line => { process.stdout.write(`${line}\n`) },
  err: line => { process.stderr.write(`${line}\n`) },
  env: process.env,
  stdin: process.stdin
}

/** Runs one admin command; resolves to the exit code. src/cli.ts (and the single executable) call it. */
export async function runAdmin (argv: string[], io: Partial<AdminIo> = {}): Promise<number> {
  const { out, err, env, stdin } = { ...processIo, ...io }
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        database: { type: 'string' },
        limit: { type: 'string' },
        after: { type: 'string' },
        before: { type: 'string' },
        user: { type: 'string' },
        type: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        'post-logout-redirect-uri': { type: 'string', multiple: true },
        'backchannel-logout-uri': { type: 'string' },
        public: { type: 'boolean', default: false },
        trusted: { type: 'boolean', default: false },
        grant: { type: 'string', multiple: true },
        pkce: { type: 'string' },
        scopes: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        version: { type: 'boolean', short: 'v', default: false }
      }
    })
  } catch (error) {
    return usage(err, (error as Error).message)
  }
  const { values, positionals } = parsed
  if (values.help || positionals[0] === 'help') {
    out(HELP)
    return 0
  }
  if (values.version) {
    out(VERSION_LINE)
    return 0
  }

  if (positionals.length === 0) {
    err(HELP)
    return 2
  }

  const options: Options = {
    json: values.json,
    limit: values.limit,
    after: values.after,
    before: values.before,
    user: values.user,
    type: values.type,
    redirectUris: values['redirect-uri'] ?? [],
    postLogoutRedirectUris: values['post-logout-redirect-uri'] ?? [],
    backchannelLogoutUri: values['backchannel-logout-uri'],
    public: values.public,
    trusted: values.trusted,
    grants: values.grant,
    pkce: values.pkce,
    scopes: values.scopes
  }
  let store: AccountStore | undefined
  try {
    const command = commandFor(positionals, options)
    // Loaded only now, so that --help and usage errors answer at once.
    const [{ loadConfig }, { openStore }] = await Promise.all([import('../core/config.js'), import('../db/open.js')])
    const config = loadConfig(env)
    const databaseUrl = values.database ?? config.databaseUrl
    const sealer = config.signingKeyEncryptionKey === undefined ? undefined : createSealer(config.signingKeyEncryptionKey)
    store = await openStore(databaseUrl)
    await command(store, options, out, { databaseUrl, sealer, env, stdin, config, log: stderrLogger(err) })
    return 0
  } catch (error) {
    if (error instanceof UsageError) return usage(err, error.message)
    if (error instanceof CommandError) printError(err, `error: ${error.message}`)
    else if (error instanceof StoreUnavailableError) printError(err, `error: the store is unavailable (locked, busy or unreachable); retry: ${(error.cause as Error)?.message ?? ''}`)
    else printError(err, `error: ${(error as Error).message}`)
    return 1
  } finally {
    await store?.close()
  }
}

/** The command the positionals name, or a UsageError; checked before the store is opened. */
function commandFor (positionals: string[], options: Options): Command {
  const group = GROUPS.get(positionals[0])
  if (group === undefined) throw unknownCommand(positionals)
  return group(positionals, options)
}

function usage (err: Output, message: string): number {
  printError(err, `${message}\nRun account-service --help for the commands.`)
  return 2
}

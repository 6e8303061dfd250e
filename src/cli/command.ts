import type { AccountStore, UserRecord } from '../../db/store.js'
import type { Config } from '../../core/config.js'
import { visible, visibleJson } from '../../core/control-characters.js'
import type { Logger, LogFn } from '../../core/logger.js'
import type { Sealer } from '../../core/secrets/sealing.js'
import type { Operator } from './operator.js'

// What every command group of the CLI (src/cli/<group>.ts) shares: the command line's options, the
// errors that choose the exit code, the arguments that name a user, and printing.

/** A mistake in the command line: exit code 2 with the help's first line. */
export class UsageError extends Error {}
/** The command ran but could not do what was asked: exit code 1. */
export class CommandError extends Error {}

export interface Options {
  json: boolean
  limit?: string
  after?: string
  before?: string
  user?: string
  type?: string
  redirectUris: string[]
  postLogoutRedirectUris: string[]
  backchannelLogoutUri?: string
  public: boolean
  trusted: boolean
  grants?: string[]
  pkce?: string
  scopes?: string
}

export type Output = (line: string) => void

/** Where a command writes its lines and which environment it reads (settings): the process's, unless a test passes its own. */
export interface AdminIo {
  out: Output
  err: Output
  env: Record<string, string | undefined>
  /** What `users import -` reads. */
  stdin: AsyncIterable<Uint8Array | string>
}

/** What a command knows besides its options: the store's URL and SIGNING_KEY_ENCRYPTION_KEY's sealer. */
export interface Context {
  databaseUrl: string
  sealer?: Sealer
  env: AdminIo['env']
  stdin: AdminIo['stdin']
  config: Config
  /** Where the rules' warnings and errors go (a webhook not written, say): standard error. */
  log: Logger
}

export type Command = (store: AccountStore, options: Options, out: Output, context: Context) => Promise<void>

/**
 * One command group (`users`, `clients`, ...): the command its positionals name (group, action, arguments), or a
 * UsageError. It checks the arguments (with the options a command's arguments are made of) before the store is opened.
 */
export type CommandGroup = (positionals: string[], options: Options) => Command

/** A UsageError showing the command's form unless it was given `count` positionals (its group and action included). */
export function expectPositionals (positionals: string[], count: number, form: string): void {
  if (positionals.length !== count) throw new UsageError(`usage: account-service ${form}`)
}

export function unknownCommand (positionals: string[]): UsageError {
  return new UsageError(`unknown command: ${positionals.join(' ')}`)
}

/** An error line on stderr; what it quotes (an argument, a store's message) shows its control characters escaped. */
export function printError (err: Output, text: string): void {
  err(visible(text, { lineBreaks: true }))
}

/** The rules' warnings and errors as lines on standard error; their info lines (each security event) are not printed. */
export function stderrLogger (err: Output): Logger {
  const line: LogFn = (first: object | string, message?: string) => {
    const error = typeof first === 'object' ? (first as { err?: Error }).err : undefined
    printError(err, `warning: ${typeof first === 'string' ? first : message ?? ''}${error === undefined ? '' : `: ${error.message}`}`)
  }
  return { debug () {}, info () {}, warn: line, error: line }
}

/**
 * Runs `act` with the admin rules as the operator's (src/cli/operator.ts), closing them after: a command that
 * changes what core/admin rules goes through it, so it audits, mails and notifies as the admin API does.
 */
export async function asOperator<T> (store: AccountStore, { config, log }: Context, act: (operator: Operator) => Promise<T>): Promise<T> {
  // Loaded only now: --help and the other commands do not pay for the rules' modules.
  const { operatorRules } = await import('./operator.js')
  const operator = operatorRules(store, config, log)
  try {
    return await act(operator)
  } finally {
    await operator.close()
  }
}

export async function findUser (store: AccountStore, idOrEmail: string): Promise<UserRecord> {
  const user = /^\d+$/.test(idOrEmail)
    ? await store.findUserById(parseId(idOrEmail))
    : await store.findUserByEmail(idOrEmail.trim().toLowerCase())
  if (user === undefined) throw new CommandError(`no user ${/^\d+$/.test(idOrEmail) ? 'with id' : 'with email'} ${idOrEmail}`)
  return user
}

export function parseId (value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`not a user id: ${value}`)
  return parsePositiveInteger(value, 'a user id')
}

export function parsePositiveInteger (value: string, name: string): number {
  const number = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) throw new UsageError(`${name} must be a positive integer, not ${value}`)
  return number
}

/**
 * What a command prints goes to an operator's terminal, and names, emails and user agents are what
 * users chose: no control character of theirs reaches it raw (finding 10 of issue 21). Values are
 * escaped where a line is made (a line break in a name does not fake a line); this is the net for the rest.
 */
export function print (out: Output, options: Options, json: unknown, text: string): void {
  out(options.json ? visibleJson(json) : visible(text, { lineBreaks: true }))
}

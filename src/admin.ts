import { createReadStream } from 'node:fs'
import { parseArgs } from 'node:util'
import { describeDatabase } from '../db/database-url.js'
import { StoreUnavailableError, USER_ROLES, type AccountStore, type SigningKeyRecord, type UserRecord, type UserRole } from '../db/store.js'
import { changeRole, CLI_OPERATOR } from '../core/admin/roles.js'
import type { Config } from '../core/config.js'
import { UserNotFoundError } from '../core/errors.js'
import type { Logger, LogFn } from '../core/logger.js'
import { SECURITY_EVENT_TYPES } from '../core/events/types.js'
import { visible, visibleJson } from '../core/control-characters.js'
import { removeClient as removeClientAndGrants } from '../core/oauth/client-removal.js'
import { CLIENT_GRANTS, CLIENT_PKCE, newClient, type ClientGrant, type ClientPkce, type NewClient } from '../core/oauth/clients.js'
import { SCOPES } from '../core/oauth/provider.js'
import { addResourceServer, listResourceServers, removeResourceServer, resourceUriProblem, scopeProblem, type ResourceServer } from '../core/oauth/resource-servers.js'
import { createSealer, type Sealer } from '../core/secrets/sealing.js'
import { newestOfEachKind, rotateSigningKeys } from '../core/tokens/keys.js'
import { VERSION_LINE } from '../core/version.js'
import type { Operator } from './operator.js'

/*
 * The admin CLI (`account-service <command>`), for the operator of one store.
 * It opens the store named by DATABASE_URL (or --database) beside a running
 * service: SQLite's WAL lets both work on one file.
 * Exit codes: 0 done, 1 failed (not found, store error), 2 usage error.
 */

const HELP = `Usage: account-service <command> [options]

Commands:
  migrate                     apply the store's migrations (the service also does at start)
  keys list                   the signing keys, oldest first; the newest of each kind (service, RS256) signs
  keys rotate                 add a new Ed25519 key and a new RS256 key (ID tokens); running services sign with them after
                              their next key reload. Sealed with SIGNING_KEY_ENCRYPTION_KEY, which a store of sealed keys
                              requires (refused without it)
  users list                  users in id order (--limit, --after for the next page)
  users show <id|email>       one user
  users delete <id>           delete a user and every session of theirs; recorded as admin_user_deleted (sent as user.deleted)
  users import <file>         import users from another system, with their password hashes (bcrypt, Argon2, scrypt, PBKDF2):
                              NDJSON, one user a line (streamed), or a JSON array; - reads standard input. Prints how many
                              were imported and skipped, and the first 100 skipped lines with their reasons (a bad line or a taken
                              email never stops it)
  users set-role <id|email> <role>
                              make a user an admin (role admin) or not (role user); recorded as a security event
                              (role_changed). Admins use the admin API (/admin)
  sessions revoke <id|email>  end every session of a user (access tokens are refused within the revocation bound); recorded as
                              admin_sessions_revoked (sent as session.revoked)
  mfa reset <id|email>        turn off a user's TOTP and void its recovery codes (support, for a lost authenticator);
                              the next login asks for the password only. Recorded as admin_mfa_reset (sent as mfa.changed);
                              the owner is mailed (through the outbox: the running service sends it)
  hash calibrate              measure Argon2id on this host and store the parameters that take about PASSWORD_HASH_TARGET
                              (never below OWASP's minimum); instances hash with them after their next start, and rehash
                              each password at its next login
  events <id|email>           a user's security events, newest first (--limit, --before <event id> for older ones)
  events export               every security event (every user's, and every admin action), newest first, one JSON object
                              a line (NDJSON), read page by page (--user <id|email>, --type <type>, --before <event id>)
  clients add <name>          register an app with the OAuth provider (--redirect-uri, required with the authorization_code
                              grant; --post-logout-redirect-uri; --backchannel-logout-uri; --public; --trusted; --grant; --pkce); prints its client_id and,
                              for a confidential client, its client_secret, shown this once only (the store keeps a hash)
  clients list                the registered apps: id, name, public or confidential, trusted, grants, redirect URIs
  clients remove <client_id>  delete an app's registration and end its grants (and tokens), as revoking them does
  resources add <uri>         register an API apps may ask tokens for (RFC 8707 resource indicators) with its scopes
                              (--scopes "read write", required): a token asked for with resource=<uri> has aud <uri> and
                              carries only these scopes. Adding a registered URI again replaces its scopes
  resources list              the registered APIs and their scopes
  resources remove <uri>      unregister an API: new tokens for it are refused (invalid_target); issued ones live out their
                              lifetime

Options:
  --database <url>   the store (default: DATABASE_URL, else ./data/accounts.db)
  --limit <n>        users list: at most n users (default 50)
  --after <id>       users list: start after this id
  --before <id>      events: only events older than this event id
  --user <id|email>  events export: only this user's events
  --type <type>      events export: only events of this type (login, account_disabled, role_changed, ...)
  --redirect-uri <url>
                     clients add: an absolute http(s) URL the app receives its codes at (repeatable)
  --post-logout-redirect-uri <url>
                     clients add: where the app may send the user after logout (repeatable)
  --backchannel-logout-uri <url>
                     clients add: where the app hears, by a signed logout token, that a user signed out
                     (OpenID Back-Channel Logout 1.0)
  --public           clients add: no client secret (a SPA, a mobile or command-line app): PKCE alone binds its codes
  --trusted          clients add: a first-party app: no consent page
  --pkce <required|optional>
                     clients add: whether the app must send PKCE (default required); optional only for a confidential
                     app that cannot send it (a public app always must)
  --grant <grant>    clients add: a grant the app may use (repeatable), replacing the default authorization_code and
                     refresh_token; one of:
                     ${CLIENT_GRANTS.join(', ')}
  --scopes <scopes>  resources add: the API's scopes, separated by spaces (none of openid, email, profile, offline_access)
  --json             print JSON instead of text
  -h, --help         this help
  -v, --version      the version, and the Node it runs on

Exit codes: 0 done, 1 failed (not found, store error), 2 usage error.`

/** A mistake in the command line: exit code 2 with the help's first line. */
class UsageError extends Error {}
/** The command ran but could not do what was asked: exit code 1. */
class CommandError extends Error {}

interface Options {
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

type Output = (line: string) => void

/** Where a command writes its lines and which environment it reads (settings): the process's, unless a test passes its own. */
export interface AdminIo {
  out: Output
  err: Output
  env: Record<string, string | undefined>
  /** What `users import -` reads. */
  stdin: AsyncIterable<Uint8Array | string>
}

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

function usage (err: Output, message: string): number {
  printError(err, `${message}\nRun account-service --help for the commands.`)
  return 2
}

/** An error line on stderr; what it quotes (an argument, a store's message) shows its control characters escaped. */
function printError (err: Output, text: string): void {
  err(visible(text, { lineBreaks: true }))
}

/** What a command knows besides its options: the store's URL and SIGNING_KEY_ENCRYPTION_KEY's sealer. */
interface Context {
  databaseUrl: string
  sealer?: Sealer
  env: AdminIo['env']
  stdin: AdminIo['stdin']
  config: Config
  /** Where the rules' warnings and errors go (a webhook not written, say): standard error. */
  log: Logger
}

/** The rules' warnings and errors as lines on standard error; their info lines (each security event) are not printed. */
function stderrLogger (err: Output): Logger {
  const line: LogFn = (first: object | string, message?: string) => {
    const error = typeof first === 'object' ? (first as { err?: Error }).err : undefined
    printError(err, `warning: ${typeof first === 'string' ? first : message ?? ''}${error === undefined ? '' : `: ${error.message}`}`)
  }
  return { debug () {}, info () {}, warn: line, error: line }
}

/** Runs `act` with the admin rules as the operator's (src/operator.ts), closing them after. */
async function asOperator<T> (store: AccountStore, { config, log }: Context, act: (operator: Operator) => Promise<T>): Promise<T> {
  // Loaded only now: --help and the other commands do not pay for the rules' modules.
  const { operatorRules } = await import('./operator.js')
  const operator = operatorRules(store, config, log)
  try {
    return await act(operator)
  } finally {
    await operator.close()
  }
}

type Command = (store: AccountStore, options: Options, out: Output, context: Context) => Promise<void>

/** The command the positionals name, or a UsageError; checked (with the options a command's arguments are made of) before the store is opened. */
function commandFor (positionals: string[], options: Options): Command {
  const [group, action, argument] = positionals
  const expect = (count: number, form: string) => {
    if (positionals.length !== count) throw new UsageError(`usage: account-service ${form}`)
  }
  // `events` takes its argument where the other groups have their action: it is named by its group alone.
  switch (group === 'events' ? group : `${group} ${action ?? ''}`.trim()) {
    case 'migrate':
      expect(1, 'migrate')
      return async (_store, options, out, { databaseUrl }) => {
        // As the start log shows it: a PostgreSQL URL without its user, password and options.
        const database = describeDatabase(databaseUrl)
        print(out, options, { migrated: database }, `migrations applied to ${database}`)
      }
    case 'keys list':
      expect(2, 'keys list')
      return listKeys
    case 'keys rotate':
      expect(2, 'keys rotate')
      return rotateKeys
    case 'users list':
      expect(2, 'users list [--limit n] [--after id]')
      return listUsers
    case 'users show':
      expect(3, 'users show <id|email>')
      return async (store, options, out) => { const user = await findUser(store, argument); print(out, options, describeUser(user), formatUser(user)) }
    case 'users set-role': {
      expect(4, `users set-role <id|email> <${USER_ROLES.join('|')}>`)
      const role = positionals[3]
      if (!(USER_ROLES as readonly string[]).includes(role)) throw new UsageError(`unknown role ${role}; one of ${USER_ROLES.join(', ')}`)
      return async (store, options, out) => setRole(store, argument, role as UserRole, options, out)
    }
    case 'users delete':
      expect(3, 'users delete <id>')
      return async (store, options, out, context) => deleteUser(store, parseId(argument), options, out, context)
    case 'users import':
      expect(3, 'users import <file|->')
      return async (store, options, out, { stdin }) => importUsers(store, () => argument === '-' ? stdin : createReadStream(argument), options, out)
    case 'sessions revoke':
      expect(3, 'sessions revoke <id|email>')
      return async (store, options, out, context) => revokeSessions(store, argument, options, out, context)
    case 'mfa reset':
      expect(3, 'mfa reset <id|email>')
      return async (store, options, out, context) => resetMfa(store, argument, options, out, context)
    case 'hash calibrate':
      expect(2, 'hash calibrate')
      return calibrateHash
    case 'events':
      if (action === 'export') {
        expect(2, 'events export [--user id|email] [--type type] [--before event-id]')
        if (options.type !== undefined && !(SECURITY_EVENT_TYPES as readonly string[]).includes(options.type)) {
          throw new UsageError(`unknown event type ${options.type}; one of ${SECURITY_EVENT_TYPES.join(', ')}`)
        }
        return exportEvents
      }
      expect(2, 'events <id|email> [--limit n] [--before event-id]')
      return async (store, options, out) => listEvents(store, action, options, out)
    case 'clients add': {
      expect(3, 'clients add <name> --redirect-uri <url> [--redirect-uri <url>] [--post-logout-redirect-uri <url>] [--backchannel-logout-uri <url>] [--public] [--trusted] [--grant <grant>] [--pkce required|optional]')
      const client = parseNewClient(argument, options)
      return async (store, options, out) => addClient(store, client, options, out)
    }
    case 'clients list':
      expect(2, 'clients list')
      return listClients
    case 'clients remove':
      expect(3, 'clients remove <client_id>')
      return async (store, options, out) => removeClient(store, argument, options, out)
    case 'resources add': {
      expect(3, 'resources add <uri> --scopes "<scope> [<scope> ...]"')
      const resource = parseResourceServer(argument, options)
      return async (store, options, out, { config }) => addResource(store, resource, config.mail.publicUrl, options, out)
    }
    case 'resources list':
      expect(2, 'resources list')
      return listResources
    case 'resources remove':
      expect(3, 'resources remove <uri>')
      return async (store, options, out) => removeResource(store, argument, options, out)
    default:
      throw new UsageError(`unknown command: ${positionals.join(' ')}`)
  }
}

async function listKeys (store: AccountStore, options: Options, out: Output) {
  const keys = await store.listSigningKeys()
  const signing = newestOfEachKind(keys)
  const described = keys.map(key => ({ ...describeKey(key), signing: signing.includes(key) }))
  print(out, options, described, described.length === 0
    ? 'no signing keys yet (the service makes one at its first start)'
    : described.map(key => `${key.kid}  ${key.algorithm}  ${key.createdAt}${key.signing ? '  (signs)' : ''}`).join('\n'))
}

async function rotateKeys (store: AccountStore, options: Options, out: Output, { sealer }: Context) {
  // Sealed with SIGNING_KEY_ENCRYPTION_KEY when it is set (the service must be given the same one).
  const keys = await rotateSigningKeys(store, { sealer })
  print(out, options, keys.map(describeKey), [
    ...keys.map(key => `added signing key ${key.kid} (${key.algorithm})`),
    'running instances sign with them once they reload their keys (SIGNING_KEY_RELOAD_INTERVAL); the old keys verify until their tokens have expired'
  ].join('\n'))
}

async function calibrateHash (store: AccountStore, options: Options, out: Output, { env }: Context) {
  const [{ loadConfig }, { createHashingPool }, { calibrate, HASH_PARAMETERS_SETTING, parseParameters, serializeParameters }] = await Promise.all([
    import('../core/config.js'), import('../core/passwords/hashing-pool.js'), import('../core/passwords/parameters.js')
  ])
  const targetMs = loadConfig(env).passwordHashTargetMs
  const previous = parseParameters(await store.readSetting(HASH_PARAMETERS_SETTING))
  const pool = createHashingPool({ size: 1 })
  try {
    const calibration = await calibrate(pool, targetMs)
    await store.writeSetting(HASH_PARAMETERS_SETTING, serializeParameters(calibration))
    const describe = ({ memoryCost, timeCost, parallelism }: { memoryCost: number, timeCost: number, parallelism: number }) => `m=${memoryCost},t=${timeCost},p=${parallelism}`
    print(out, options, { ...calibration, targetMs, previous: previous ?? null },
      `stored Argon2id ${describe(calibration)} (about ${calibration.expectedMs} ms a hash here, target ${targetMs} ms; was ${previous === undefined ? 'none' : describe(previous)}); instances use them after their next start and rehash each password at its next login`)
  } finally {
    await pool.close()
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

/**
 * Users from NDJSON or a JSON array (told apart by the first character that is not a space: `[`). NDJSON is
 * streamed, batch by batch; an array is parsed whole, so for a big import NDJSON is the form to use.
 */
async function importUsers (store: AccountStore, open: () => AsyncIterable<Uint8Array | string>, options: Options, out: Output) {
  const [{ createUserImport }, { systemClock }] = await Promise.all([import('../core/accounts/import.js'), import('../core/clock.js')])
  const userImport = createUserImport({ store, clock: systemClock })
  // Opened and read at once: a file's open error is then the first read's.
  const chunks = open()[Symbol.asyncIterator]()
  const head: Array<Uint8Array | string> = []
  let first: string | undefined
  try {
    while (first === undefined) {
      const next = await chunks.next()
      if (next.done === true) break
      head.push(next.value)
      first = /[^\s\uFEFF]/u.exec(typeof next.value === 'string' ? next.value : Buffer.from(next.value).toString('utf8'))?.[0]
    }
  } catch (error) {
    throw new CommandError(`cannot read the users: ${(error as Error).message}`)
  }
  async function * all () {
    yield * head
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield next.value
  }
  let summary
  if (first === '[') {
    const parts: Buffer[] = []
    for await (const chunk of all()) parts.push(Buffer.from(chunk))
    let users: unknown
    try {
      users = JSON.parse(Buffer.concat(parts).toString('utf8').replace(/^\uFEFF/, ''))
    } catch (error) {
      throw new CommandError(`the file starts with [ but is no JSON array: ${(error as Error).message}`)
    }
    summary = await userImport.importArray(users)
  } else {
    summary = await userImport.importNdjson(all())
  }
  const { imported, skipped, skipped_count: skippedCount } = summary
  print(out, options, summary, [
    `imported ${imported} user${imported === 1 ? '' : 's'}, skipped ${skippedCount}`,
    ...skipped.map(({ line, reason }) => `line ${line}: ${reason}`),
    ...(summary.skipped_truncated ? [`(the first ${skipped.length} skipped lines; ${skippedCount - skipped.length} more not listed)`] : [])
  ].join('\n'))
}

/** As the admin API's "end sessions": the audit row (admin_sessions_revoked) and the session.revoked webhook. */
async function revokeSessions (store: AccountStore, idOrEmail: string, options: Options, out: Output, context: Context) {
  const user = await findUser(store, idOrEmail)
  const revoked = await asOperator(store, context, ({ admin }) => admin.endSessions(CLI_OPERATOR, user.id))
  print(out, options, { userId: user.id, revoked }, `revoked ${revoked} session${revoked === 1 ? '' : 's'} of user ${user.id} (${visible(user.email)})`)
}

/** As the admin API's reset: the audit row (admin_mfa_reset), the mfa.changed webhook, and the owner's mail when TOTP was on. */
async function resetMfa (store: AccountStore, idOrEmail: string, options: Options, out: Output, context: Context) {
  const user = await findUser(store, idOrEmail)
  const { totpWasOn, removed } = await asOperator(store, context, ({ admin }) => admin.resetMfa(CLI_OPERATOR, user.id))
  print(out, options, { userId: user.id, reset: totpWasOn }, totpWasOn
    ? `turned off TOTP of user ${user.id} (${visible(user.email)}) and voided its recovery codes; the next login asks for the password only`
    : `user ${user.id} (${visible(user.email)}) had no TOTP turned on${removed ? ' (a setup not yet confirmed was removed)' : ''}; nothing to reset`)
}

async function setRole (store: AccountStore, idOrEmail: string, role: UserRole, options: Options, out: Output) {
  const user = await findUser(store, idOrEmail)
  const { changed } = await changeRole(store, user.id, role, CLI_OPERATOR, new Date())
  print(out, options, { userId: user.id, role, changed }, changed
    ? `user ${user.id} (${visible(user.email)}) is now ${role === 'admin' ? 'an admin' : 'a user'} (was ${user.role})`
    : `user ${user.id} (${visible(user.email)}) already had the role ${role}; nothing changed`)
}

/** How many events an export reads at a time: memory stays flat however long the trail. */
const EXPORT_PAGE = 500

/** NDJSON of every event matching the filters, newest first, written page by page. */
async function exportEvents (store: AccountStore, options: Options, out: Output) {
  const userId = options.user === undefined ? undefined : (await findUser(store, options.user)).id
  let beforeId = options.before === undefined ? undefined : parsePositiveInteger(options.before, '--before')
  for (;;) {
    const page = await store.searchSecurityEvents({ userId, type: options.type, beforeId, limit: EXPORT_PAGE })
    for (const event of page) {
      out(JSON.stringify({
        id: event.id,
        type: event.type,
        user_id: event.userId,
        actor_id: event.actorId,
        session_id: event.sessionId,
        ip: event.ip,
        user_agent: event.userAgent,
        request_id: event.requestId,
        detail: event.detail,
        created_at: event.createdAt.toISOString()
      }))
    }
    if (page.length < EXPORT_PAGE) return
    beforeId = page[page.length - 1].id
  }
}

async function listEvents (store: AccountStore, idOrEmail: string, options: Options, out: Output) {
  const user = await findUser(store, idOrEmail)
  const limit = parsePositiveInteger(options.limit ?? '50', '--limit')
  const beforeId = options.before === undefined ? undefined : parsePositiveInteger(options.before, '--before')
  const events = await store.listSecurityEvents(user.id, { limit, beforeId })
  const described = events.map(event => ({ ...event, createdAt: event.createdAt.toISOString() }))
  print(out, options, described, events.length === 0
    ? `no security events of user ${user.id} (${visible(user.email)})`
    : described.map(event => visible(`${event.id}  ${event.createdAt}  ${event.type}  ${event.ip ?? '-'}  ${event.userAgent ?? '-'}${event.detail === null ? '' : `  ${JSON.stringify(event.detail)}`}`)).join('\n'))
}

/** What `clients add` was given, checked: the usage errors come before the store is opened. */
function parseNewClient (name: string, options: Options): NewClient {
  if (name.trim() === '') throw new UsageError('a client needs a name')
  if (visible(name) !== name) throw new UsageError(`a client name may not hold control characters: ${name}`)
  const grants = options.grants === undefined ? undefined : [...new Set(options.grants)]
  for (const grant of grants ?? []) {
    if (!(CLIENT_GRANTS as readonly string[]).includes(grant)) throw new UsageError(`unknown grant ${grant}; one of ${CLIENT_GRANTS.join(', ')}`)
  }
  for (const uri of [...options.redirectUris, ...options.postLogoutRedirectUris, ...(options.backchannelLogoutUri === undefined ? [] : [options.backchannelLogoutUri])]) checkRedirectUri(uri)
  const usesCodes = grants === undefined || grants.includes('authorization_code')
  if (usesCodes && options.redirectUris.length === 0) throw new UsageError('the authorization_code grant needs at least one --redirect-uri')
  if (options.public && grants?.includes('client_credentials') === true) throw new UsageError('a --public client has no secret to use the client_credentials grant with')
  if (options.pkce !== undefined && !(CLIENT_PKCE as readonly string[]).includes(options.pkce)) throw new UsageError(`--pkce is one of ${CLIENT_PKCE.join(', ')}: ${options.pkce}`)
  // PKCE is all that binds a public client's code to it: it may never leave it out.
  if (options.public && options.pkce === 'optional') throw new UsageError('a --public client must send PKCE: --pkce optional is only for a confidential client')
  return {
    name,
    redirectUris: [...new Set(options.redirectUris)],
    postLogoutRedirectUris: [...new Set(options.postLogoutRedirectUris)],
    ...(options.backchannelLogoutUri === undefined ? {} : { backchannelLogoutUri: options.backchannelLogoutUri }),
    public: options.public,
    trusted: options.trusted,
    grants: grants as ClientGrant[] | undefined,
    pkce: options.pkce as ClientPkce | undefined
  }
}

/** An absolute http(s) URL, without a fragment (RFC 6749, 3.1.2), as the app will send it. */
function checkRedirectUri (uri: string): void {
  let url: URL | undefined
  try {
    url = new URL(uri)
  } catch {}
  // Written out in full: the URL parser would also take https:app.example (and make it https://app.example/).
  if (url === undefined || !/^https?:\/\//i.test(uri)) throw new UsageError(`not an absolute http(s) URL: ${uri}`)
  if (uri.includes('#')) throw new UsageError(`a redirect URI may not have a fragment: ${uri}`)
}

async function addClient (store: AccountStore, client: NewClient, options: Options, out: Output) {
  const { metadata, secret } = newClient(client)
  await store.upsertOAuthModel('Client', metadata.client_id, metadata, null)
  const described = { client_id: metadata.client_id, ...(secret === undefined ? {} : { client_secret: secret }), ...describeClient(metadata) }
  const lines = [
    `added ${described.public ? 'public' : 'confidential'} client ${visible(described.client_name)}`,
    `client_id: ${metadata.client_id}`
  ]
  if (secret !== undefined) {
    lines.push(`client_secret: ${secret}`, 'The client secret is shown only now: the store keeps its hash, and it cannot be shown again. Give it to the app now.')
  }
  print(out, options, described, lines.join('\n'))
}

async function listClients (store: AccountStore, options: Options, out: Output) {
  const clients = (await store.listOAuthModels('Client', new Date())).map(client => ({ client_id: client.id, ...describeClient(client.payload) }))
  print(out, options, clients, clients.length === 0
    ? 'no clients'
    : clients.map(client => visible(`${client.client_id}  ${client.client_name}  ${client.public ? 'public' : 'confidential'}${client.trusted ? '  trusted' : ''}${client.pkce === 'optional' ? '  pkce optional' : ''}` +
      `  grants: ${client.grant_types.length === 0 ? '-' : client.grant_types.join(',')}  redirect URIs: ${client.redirect_uris.length === 0 ? '-' : client.redirect_uris.join(' ')}`)).join('\n'))
}

async function removeClient (store: AccountStore, clientId: string, options: Options, out: Output) {
  if (!await removeClientAndGrants(store, clientId, new Date())) throw new CommandError(`no client with id ${clientId}`)
  print(out, options, { removed: clientId }, `removed client ${visible(clientId)}`)
}

/** What `resources add` was given, checked before the store is opened. */
function parseResourceServer (uri: string, options: Options): ResourceServer {
  const problem = resourceUriProblem(uri)
  if (problem !== undefined) throw new UsageError(problem)
  const scopes = (options.scopes ?? '').split(' ').filter(scope => scope !== '')
  if (scopes.length === 0) throw new UsageError('an API needs its scopes: --scopes "read write"')
  for (const scope of scopes) {
    const scopeIssue = scopeProblem(scope, SCOPES)
    if (scopeIssue !== undefined) throw new UsageError(scopeIssue)
  }
  return { uri, scopes: [...new Set(scopes)] }
}

async function addResource (store: AccountStore, resource: ResourceServer, publicUrl: string, options: Options, out: Output) {
  // The service's own resource is PUBLIC_URL, with the user scopes: an API of that name would never be asked for.
  if (resource.uri === publicUrl) throw new CommandError(`${resource.uri} is PUBLIC_URL, the service's own resource`)
  const replaced = await addResourceServer(store, resource, new Date())
  print(out, options, { resource: resource.uri, scopes: resource.scopes, replaced },
    `${replaced ? 'updated' : 'added'} resource ${resource.uri} with the scopes ${resource.scopes.join(' ')}; running instances take it within seconds`)
}

async function listResources (store: AccountStore, options: Options, out: Output) {
  const resources = await listResourceServers(store, new Date())
  print(out, options, resources.map(({ uri, scopes }) => ({ resource: uri, scopes })), resources.length === 0
    ? 'no resources (apps\' tokens are all for the service itself, PUBLIC_URL)'
    : resources.map(({ uri, scopes }) => `${uri}  scopes: ${scopes.join(' ')}`).join('\n'))
}

async function removeResource (store: AccountStore, uri: string, options: Options, out: Output) {
  if (!await removeResourceServer(store, uri, new Date())) throw new CommandError(`no resource ${uri}`)
  print(out, options, { removed: uri }, `removed resource ${uri}: new tokens for it are refused; issued ones live out their lifetime`)
}

/**
 * A client's stored metadata, named field by field: never its secret (a hash here, but a hash of a
 * short secret could be guessed offline), nor anything else a registration may have stored beside.
 */
function describeClient (metadata: Record<string, unknown>) {
  const strings = (value: unknown) => Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
  return {
    client_name: typeof metadata.client_name === 'string' ? metadata.client_name : '',
    public: metadata.token_endpoint_auth_method === 'none',
    trusted: metadata.trusted === true,
    pkce: metadata.pkce === 'optional' ? 'optional' : 'required',
    grant_types: strings(metadata.grant_types),
    redirect_uris: strings(metadata.redirect_uris),
    post_logout_redirect_uris: strings(metadata.post_logout_redirect_uris),
    ...(typeof metadata.backchannel_logout_uri === 'string' ? { backchannel_logout_uri: metadata.backchannel_logout_uri } : {})
  }
}

async function findUser (store: AccountStore, idOrEmail: string): Promise<UserRecord> {
  const user = /^\d+$/.test(idOrEmail)
    ? await store.findUserById(parseId(idOrEmail))
    : await store.findUserByEmail(idOrEmail.trim().toLowerCase())
  if (user === undefined) throw new CommandError(`no user ${/^\d+$/.test(idOrEmail) ? 'with id' : 'with email'} ${idOrEmail}`)
  return user
}

function parseId (value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`not a user id: ${value}`)
  return parsePositiveInteger(value, 'a user id')
}

function parsePositiveInteger (value: string, name: string): number {
  const number = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) throw new UsageError(`${name} must be a positive integer, not ${value}`)
  return number
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

/** A key without its private half. */
function describeKey (key: Pick<SigningKeyRecord, 'kid' | 'algorithm' | 'createdAt'>) {
  return { kid: key.kid, algorithm: key.algorithm, createdAt: key.createdAt.toISOString() }
}

/**
 * What a command prints goes to an operator's terminal, and names, emails and user agents are what
 * users chose: no control character of theirs reaches it raw (finding 10 of issue 21). Values are
 * escaped where a line is made (a line break in a name does not fake a line); this is the net for the rest.
 */
function print (out: Output, options: Options, json: unknown, text: string): void {
  out(options.json ? visibleJson(json) : visible(text, { lineBreaks: true }))
}

import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import packageJson from '../../package.json' with { type: 'json' }
import { runAdmin } from '../../src/admin.js'
import { build } from '../fixtures/build.js'
import { loggedInUser, registerUser } from '../fixtures/factories.js'
import { enableTotp, mfaToken, verify } from '../fixtures/mfa.js'
import { runNode } from '../fixtures/process.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

/** The built CLI, as `npx account-service` runs it (pretest builds it). */
const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url))

async function spawnCli (databaseUrl: string | undefined, ...args: string[]) {
  const result = await runNode([CLI, ...args], { PATH: process.env.PATH, ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }) })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/**
 * `account-service <args>` in this process, as the built CLI runs it (src/cli.ts calls runAdmin), with
 * DATABASE_URL as given: a spawned CLI costs a second or two of start each, so only the test of the
 * process itself (exit codes, --version) spawns the built one.
 */
async function cli (databaseUrl: string | undefined, ...args: string[]) {
  const stdout: string[] = []
  const stderr: string[] = []
  const code = await runAdmin(args, {
    out: line => { stdout.push(`${line}\n`) },
    err: line => { stderr.push(`${line}\n`) },
    env: databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }
  })
  return { code, stdout: stdout.join(''), stderr: stderr.join('') }
}

t.test('--help lists every command and exits 0; no command or a wrong one exits 2', async (t) => {
  const help = await spawnCli(undefined, '--help')
  t.equal(help.code, 0)
  for (const command of ['migrate', 'keys list', 'keys rotate', 'users list', 'users show <id|email>', 'users delete <id>', 'sessions revoke <id|email>', 'mfa reset <id|email>']) {
    t.match(help.stdout, command)
  }
  t.match(help.stdout, /Exit codes: 0 done, 1 failed .*, 2 usage error/)
  const none = await spawnCli(undefined)
  t.equal(none.code, 2)
  t.match(none.stderr, /^Usage: account-service <command>/)
  t.equal((await spawnCli(undefined, 'frobnicate')).code, 2, 'the process exits with the code')
  for (const args of [['frobnicate'], ['users', 'delete', 'x'], ['--bogus', 'migrate']]) {
    const wrong = await cli(undefined, ...args)
    t.equal(wrong.code, 2, `${args.join(' ')}: exit 2`)
    t.match(wrong.stderr, /Run account-service --help for the commands\.\n$/)
    t.equal(wrong.stdout, '')
  }
  t.equal((await spawnCli(undefined, '--version')).stdout, `account-service ${packageJson.version} (Node ${process.version})\n`, 'the version, and the Node it runs on')
})

t.test('migrate creates and migrates the store named by DATABASE_URL or --database', async (t) => {
  const fromEnvironment = temporaryDatabase(t)
  const migrated = await cli(fromEnvironment, 'migrate')
  t.equal((await cli(fromEnvironment, 'migrate')).code, 0, 'and again, changing nothing')
  t.equal(migrated.code, 0, migrated.stderr)
  t.equal(migrated.stdout, `migrations applied to ${fromEnvironment}\n`)
  t.ok(existsSync(fromEnvironment))
  const fromOption = temporaryDatabase(t)
  t.equal((await cli(fromEnvironment, 'migrate', '--database', fromOption)).code, 0)
  t.ok(existsSync(fromOption), '--database wins over DATABASE_URL')
  const server = await build(t, { env: { DATABASE_URL: fromOption } })
  t.equal((await server.inject('/ready')).statusCode, 200, 'the service finds the store ready')
})

t.test('a store that cannot be opened exits 1 with one error line', async (t) => {
  const file = temporaryDatabase(t)
  t.equal((await cli(file, 'migrate')).code, 0)
  const broken = await cli(`${file}/accounts.db`, 'users', 'list')
  t.equal(broken.code, 1)
  t.match(broken.stderr, /^error: .+\n$/)
})

t.test('users list, show, delete against a store the service wrote', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { env: { DATABASE_URL: databaseUrl } })
  const users = [await registerUser(server, 'cookie'), await registerUser(server, 'cookie'), await registerUser(server, 'cookie')]

  const listed = await cli(databaseUrl, 'users', 'list', '--json')
  t.equal(listed.code, 0, listed.stderr)
  const all = JSON.parse(listed.stdout)
  t.same(all.map((user: { id: number }) => user.id), users.map(user => user.id))
  t.same(Object.keys(all[0]).sort(), ['created_at', 'disabled', 'email', 'first_name', 'id', 'last_login_at', 'last_name', 'role', 'updated_at', 'username'], 'no password hash')
  const page = JSON.parse((await cli(databaseUrl, 'users', 'list', '--json', '--limit', '1', '--after', String(users[0].id))).stdout)
  t.same(page.map((user: { id: number }) => user.id), [users[1].id], 'pages by --limit and --after')

  const byEmail = await cli(databaseUrl, 'users', 'show', users[1].email.toUpperCase(), '--json')
  t.equal(byEmail.code, 0)
  t.equal(JSON.parse(byEmail.stdout).id, users[1].id, 'by email, in any case')
  t.match((await cli(databaseUrl, 'users', 'show', String(users[1].id))).stdout, new RegExp(`^${users[1].id}  ${users[1].email}  `), 'by id, as text')
  const unknown = await cli(databaseUrl, 'users', 'show', 'nobody@example.com')
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'error: no user with email nobody@example.com\n')

  const deleted = await cli(databaseUrl, 'users', 'delete', String(users[2].id))
  t.equal(deleted.code, 0)
  t.equal(deleted.stdout, `deleted user ${users[2].id} and their sessions\n`)
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: users[2].email, password: users[2].password } })).statusCode, 401, 'the deleted user cannot log in')
  const again = await cli(databaseUrl, 'users', 'delete', String(users[2].id))
  t.equal(again.code, 1)
  t.equal(again.stderr, `error: no user with id ${users[2].id}\n`)
})

t.test('sessions revoke ends every session of a user', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { env: { DATABASE_URL: databaseUrl } })
  const first = await loggedInUser(server, 'cookie')
  const otherUser = await loggedInUser(server, 'cookie')
  const revoked = await cli(databaseUrl, 'sessions', 'revoke', first.user.email)
  t.equal(revoked.code, 0, revoked.stderr)
  t.equal(revoked.stdout, `revoked 1 session of user ${first.user.id} (${first.user.email})\n`)
  const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: first.refreshToken } })
  t.equal(refresh.statusCode, 401)
  t.equal(refresh.json().code, 'INVALID_REFRESH_TOKEN')
  const untouched = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: otherUser.refreshToken } })
  t.equal(untouched.statusCode, 200, "another user's session lives on")
  t.equal(JSON.parse((await cli(databaseUrl, 'sessions', 'revoke', String(first.user.id), '--json')).stdout).revoked, 0, 'nothing left to revoke')
})

t.test('mfa reset turns off a user\'s TOTP and voids its recovery codes, recorded as a security event', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, 'cookie')
  const { recoveryCodes } = await enableTotp(server, 'cookie', session)
  const bystander = await loggedInUser(server, 'cookie')
  await enableTotp(server, 'cookie', bystander)
  const token = await mfaToken(server, session.user)

  const reset = await cli(databaseUrl, 'mfa', 'reset', session.user.email.toUpperCase())
  t.equal(reset.code, 0, reset.stderr)
  t.equal(reset.stdout, `turned off TOTP of user ${session.user.id} (${session.user.email}) and voided its recovery codes; the next login asks for the password only\n`)
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } })
  t.equal(login.statusCode, 200, 'the password alone logs in')
  t.equal((await verify(server, token, recoveryCodes[0])).statusCode, 401, 'a pending mfa_token and the recovery codes are void')
  const account = await server.inject({ method: 'GET', url: '/auth/account', cookies: { accessToken: login.json().accessToken } })
  t.same(account.json().mfa, { totp: false, passkeys: false, recovery_codes_left: 0 })
  const events = JSON.parse((await cli(databaseUrl, 'events', String(session.user.id), '--json')).stdout)
  // The admin API's event (issue 33, finding 15), with the operator (no admin account) as actor.
  t.match(events.find((event: { type: string }) => event.type === 'admin_mfa_reset'), { detail: { user_id: session.user.id, totp_was_on: true }, actorId: null, ip: null, sessionId: null })
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: bystander.user.email, password: bystander.user.password } })).statusCode, 403,
    'another user keeps its TOTP')

  const again = await cli(databaseUrl, 'mfa', 'reset', String(session.user.id), '--json')
  t.equal(again.code, 0)
  t.same(JSON.parse(again.stdout), { userId: session.user.id, reset: false }, 'nothing to reset')
  const resets = JSON.parse((await cli(databaseUrl, 'events', String(session.user.id), '--json')).stdout).filter((event: { type: string }) => event.type === 'admin_mfa_reset')
  t.same(resets.map((event: { detail: { totp_was_on: boolean } }) => event.detail.totp_was_on), [false, true], 'the operator\'s act is audited, saying nothing was on')
  t.equal((await cli(databaseUrl, 'mfa', 'reset', 'nobody@example.com')).code, 1)
  t.equal((await cli(databaseUrl, 'mfa', 'reset')).code, 2)
})

t.test('keys rotate adds a key of each kind, and new access tokens are signed with the new service key', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const before = await build(t, { env: { DATABASE_URL: databaseUrl } })
  const oldKid = (await before.inject('/.well-known/jwks.json')).json().keys[0].kid
  await before.close()

  const rotated = await cli(databaseUrl, 'keys', 'rotate', '--json')
  t.equal(rotated.code, 0, rotated.stderr)
  const [newKid, newRs256Kid] = JSON.parse(rotated.stdout).map((key: { kid: string }) => key.kid)
  t.not(newKid, oldKid)
  const listed = await cli(databaseUrl, 'keys', 'list')
  t.equal(listed.code, 0)
  // The old RS256 key was made when the JWKS was first asked for.
  t.match(listed.stdout, new RegExp(`^${oldKid}  EdDSA  \\S+\\n\\S+  RS256  \\S+\\n${newKid}  EdDSA  \\S+  \\(signs\\)\\n${newRs256Kid}  RS256  \\S+  \\(signs\\)\\n$`))
  t.notMatch(rotated.stdout, /PRIVATE/, 'never the private key')

  const after = await build(t, { env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(after, 'cookie')
  const header = JSON.parse(Buffer.from(session.accessToken.split('.')[0], 'base64url').toString())
  t.equal(header.kid, newKid, 'new tokens carry the new key id')
})

t.test('users set-role makes a user an admin (recorded as role_changed) who may then use /admin; a wrong role is a usage error', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, 'cookie')
  const adminUsers = () => server.inject({ method: 'GET', url: '/admin/users', cookies: { accessToken: session.accessToken } })
  t.equal((await adminUsers()).statusCode, 403, 'a user is no admin')

  const granted = await cli(databaseUrl, 'users', 'set-role', session.user.email, 'admin')
  t.equal(granted.code, 0, granted.stderr)
  t.match(granted.stdout, `user ${session.user.id} (${session.user.email}) is now an admin (was user)`)
  t.equal((await adminUsers()).statusCode, 200, 'the role is read at the next request')
  t.match(JSON.parse((await cli(databaseUrl, 'users', 'show', String(session.user.id), '--json')).stdout), { role: 'admin', disabled: false, last_login_at: String })
  t.match((await cli(databaseUrl, 'users', 'set-role', String(session.user.id), 'admin')).stdout, /already had the role admin; nothing changed/)

  const events = await cli(databaseUrl, 'events', 'export', '--type', 'role_changed')
  t.equal(events.code, 0, events.stderr)
  const lines = events.stdout.trim().split('\n').map(line => JSON.parse(line))
  t.match(lines, [{ type: 'role_changed', user_id: session.user.id, actor_id: null, detail: { from: 'user', to: 'admin' } }], 'once: setting the same role again records nothing')

  t.equal((await cli(databaseUrl, 'users', 'set-role', session.user.email, 'root')).code, 2, 'an unknown role: 2')
  t.equal((await cli(databaseUrl, 'users', 'set-role', session.user.email)).code, 2, 'no role: 2')
  t.equal((await cli(databaseUrl, 'users', 'set-role', 'nobody@example.com', 'admin')).code, 1, 'no such user: 1')
})

t.test('events export prints every event as NDJSON, page by page, filtered by user, type and before', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { env: { DATABASE_URL: databaseUrl } })
  const ada = await loggedInUser(server, 'cookie')
  const bob = await loggedInUser(server, 'cookie')
  const record = (userId: number, index: number) => server.store.recordSecurityEvent({
    type: 'login_failed', userId, sessionId: null, ip: null, userAgent: null, requestId: null, detail: { index }, createdAt: new Date()
  })
  // More than a page (500) of one user's events.
  for (let index = 0; index < 520; index++) await record(ada.user.id, index)

  const all = await cli(databaseUrl, 'events', 'export')
  t.equal(all.code, 0, all.stderr)
  const events = all.stdout.trim().split('\n').map(line => JSON.parse(line))
  t.ok(events.length >= 522, `every event across pages (${events.length})`)
  t.ok(events.every((event, index) => index === 0 || event.id < events[index - 1].id), 'newest first, no repeats')
  t.ok(events.some(event => event.user_id === bob.user.id && event.type === 'login'), 'every user\'s')
  const bobs = (await cli(databaseUrl, 'events', 'export', '--user', bob.user.email)).stdout.trim().split('\n').map(line => JSON.parse(line))
  t.ok(bobs.length > 0 && bobs.every(event => event.user_id === bob.user.id), '--user')
  const failures = (await cli(databaseUrl, 'events', 'export', '--type', 'login_failed')).stdout.trim().split('\n')
  t.equal(failures.length, 520, '--type')
  const older = (await cli(databaseUrl, 'events', 'export', '--type', 'login_failed', '--before', String(events[0].id))).stdout.trim().split('\n').map(line => JSON.parse(line))
  t.ok(older.every(event => event.id < events[0].id), '--before')
  t.equal((await cli(databaseUrl, 'events', 'export', '--type', 'nonsense')).code, 2, 'an unknown type: 2')
})

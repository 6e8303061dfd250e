import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser, newUserBody, type Session } from '../fixtures/factories.js'
import { onPostgres } from '../fixtures/database.js'
import { temporaryDatabase } from '../fixtures/temporary.js'

/*
 * Store faults: the SQLite file locked by another process, made read-only,
 * or on a full disk. Writes answer 503 STORE_UNAVAILABLE with Retry-After in
 * the error shape, reads and the health check go on, nothing crashes, and
 * the service writes again once the fault ends. Cookie variant: it has the
 * most writing routes (register, login, rotation, PATCH, logout).
 */

const VARIANT = 'cookie'
// Faults of a SQLite file (locks, permissions, a full disk); test/db/postgres.test.ts has PostgreSQL's outages.
const SQLITE_ONLY = onPostgres && 'faults of the SQLite file: tested in the SQLite pass'

function assertUnavailable (t: Test, response: Awaited<ReturnType<FastifyInstance['inject']>>, what: string) {
  t.test(what, async (t) => {
    assertError(t, response, 503, 'STORE_UNAVAILABLE')
    t.equal(response.headers['retry-after'], '1', 'Retry-After: 1')
  })
}

const write = {
  register: (server: FastifyInstance, body = newUserBody(VARIANT)) => server.inject({ method: 'POST', url: '/auth/register', payload: body }),
  login: (server: FastifyInstance, session: Session) => server.inject({ method: 'POST', url: '/auth/login', payload: { email: session.user.email, password: session.user.password } }),
  refresh: (server: FastifyInstance, session: Session) => server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(VARIANT, session) }),
  patch: (server: FastifyInstance, session: Session) => server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, ...credentials(VARIANT, session), payload: { first_name: 'Changed' } }),
  logout: (server: FastifyInstance, session: Session) => server.inject({ method: 'POST', url: '/auth/logout', ...credentials(VARIANT, session) })
}

/** While the fault lasts: the read routes still answer. */
async function assertReadsServed (t: Test, server: FastifyInstance, session: Session) {
  t.equal((await server.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'health check served')
  const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, ...credentials(VARIANT, session) })
  t.equal(read.statusCode, 200, 'the user is still read')
  t.equal(read.json().first_name, session.user.body.first_name, 'the refused PATCH changed nothing')
}

/** After the fault: every kind of write works again. */
async function assertRecovered (t: Test, server: FastifyInstance, session: Session) {
  t.equal((await write.register(server)).statusCode, 201, 'register works again')
  t.equal((await write.patch(server, session)).statusCode, 204, 'PATCH works again')
  t.equal((await write.refresh(server, session)).statusCode, 200, 'refresh works again')
  t.equal((await write.login(server, session)).statusCode, 200, 'login works again')
}

/** A registration answered 503 left no user behind: its email logs in nowhere and is free to register. */
async function assertNotRegistered (t: Test, server: FastifyInstance, body: Record<string, string>) {
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: body.email, password: body.password } })
  t.equal(login.statusCode, 401, 'the refused registration left no user')
  t.equal((await write.register(server, body)).statusCode, 201, 'its email and username are still free')
}

t.test('a write lock held by another connection: 503 after the busy timeout, then recovery', { skip: SQLITE_ONLY }, async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { variant: VARIANT, env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, VARIANT)

  // Another process (an admin command, a backup) takes the write lock and keeps it.
  const other = new Database(databaseUrl)
  t.teardown(() => { if (other.open) other.close() })
  other.exec('BEGIN IMMEDIATE')
  const started = Date.now()
  const refusedUser = newUserBody(VARIANT)
  assertUnavailable(t, await write.register(server, refusedUser), 'register while locked')
  t.ok(Date.now() - started >= 1500, 'the write waited for the lock before giving up')
  assertUnavailable(t, await write.refresh(server, session), 'refresh while locked')
  await assertReadsServed(t, server, session)

  other.exec('ROLLBACK')
  await assertRecovered(t, server, session)
  await assertNotRegistered(t, server, refusedUser)
})

/**
 * Makes files immutable (chattr +i). Root ignores permission bits, so chmod
 * would not stop its writes; the immutable attribute stops everyone, and
 * applies to the file the store already holds open. Undefined when the
 * filesystem or the user cannot set it.
 */
function immutable (files: string[], on: boolean): string | undefined {
  try {
    execFileSync('chattr', [on ? '+i' : '-i', ...files], { stdio: 'pipe' })
    return undefined
  } catch (error) {
    return (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message
  }
}

/** Why files cannot be made immutable here, or undefined when they can. */
function immutableRefused (): string | undefined {
  const folder = mkdtempSync(join(tmpdir(), 'account-chattr-'))
  const probe = join(folder, 'probe')
  closeSync(openSync(probe, 'w'))
  const refused = immutable([probe], true)
  immutable([probe], false)
  rmSync(folder, { recursive: true, force: true })
  return refused === undefined ? undefined : `cannot make a file read-only here (chattr +i needs root and a filesystem with the attribute): ${refused}`
}

t.test('a database file made read-only under the running service: 503, then recovery', { skip: SQLITE_ONLY || (immutableRefused() ?? false) }, async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const server = await build(t, { variant: VARIANT, env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(server, VARIANT)

  // The database and its write-ahead log (where commits go); not the -shm index, which SQLite maps into memory.
  const files = [databaseUrl, `${databaseUrl}-wal`]
  t.equal(immutable(files, true), undefined, 'chattr +i')
  const refusedUser = newUserBody(VARIANT)
  try {
    assertUnavailable(t, await write.register(server, refusedUser), 'register on a read-only file')
    assertUnavailable(t, await write.login(server, session), 'login on a read-only file')
    assertUnavailable(t, await write.refresh(server, session), 'refresh on a read-only file')
    assertUnavailable(t, await write.patch(server, session), 'PATCH on a read-only file')
    assertUnavailable(t, await write.logout(server, session), 'logout on a read-only file')
    await assertReadsServed(t, server, session)
  } finally {
    immutable(files, false)
  }
  await assertRecovered(t, server, session)
  await assertNotRegistered(t, server, refusedUser)
})

t.test('a database file that is read-only when the service starts: 503, then recovery once it is writable', { skip: SQLITE_ONLY || (immutableRefused() ?? false) }, async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const first = await build(t, { variant: VARIANT, env: { DATABASE_URL: databaseUrl } })
  const session = await loggedInUser(first, VARIANT)
  await first.close()

  // SQLite opens a file it may not write read-only, and that connection stays read-only.
  t.equal(immutable([databaseUrl], true), undefined, 'chattr +i')
  const refusedUser = newUserBody(VARIANT)
  let server: FastifyInstance
  try {
    server = await build(t, { variant: VARIANT, env: { DATABASE_URL: databaseUrl } })
    t.equal((await server.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'the service starts and serves')
    assertUnavailable(t, await write.register(server, refusedUser), 'register on a file opened read-only')
    assertUnavailable(t, await write.login(server, session), 'login on a file opened read-only')
    assertUnavailable(t, await write.login(server, session), 'login again, while the file is still read-only')
  } finally {
    immutable([databaseUrl], false)
  }
  const relogged = await write.login(server, session)
  t.equal(relogged.statusCode, 200, 'login works again without a restart')
  await assertNotRegistered(t, server, refusedUser)
})

/** Mounts a tmpfs of `size`; returns its folder, or why it could not (mounting needs root). */
function mountTmpfs (size: string): { folder: string } | { refused: string } {
  const folder = mkdtempSync(join(tmpdir(), 'account-full-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', folder], { stdio: 'pipe' })
    return { folder }
  } catch (error) {
    rmSync(folder, { recursive: true, force: true })
    return { refused: (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message }
  }
}

/** Writes to `path` until the disk refuses another byte. */
function fillDisk (path: string) {
  const descriptor = openSync(path, 'w')
  try {
    for (const chunk of [1 << 16, 4096, 1]) {
      const bytes = Buffer.alloc(chunk, 1)
      try {
        for (;;) writeSync(descriptor, bytes)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
      }
    }
  } finally {
    closeSync(descriptor)
  }
}

const mounted = mountTmpfs('4m')
const mountRefused = 'refused' in mounted ? `cannot mount a small tmpfs to fill (needs root): ${mounted.refused}` : false

t.test('a full disk: 503, then recovery when space is freed', { skip: SQLITE_ONLY || mountRefused }, async (t) => {
  if (!('folder' in mounted)) return
  const { folder } = mounted
  const databaseUrl = join(folder, 'accounts.db')
  const server = await build(t, { variant: VARIANT, env: { DATABASE_URL: databaseUrl } })
  try {
    const session = await loggedInUser(server, VARIANT)
    // Empty the write-ahead log, so that the next commit needs new space rather than reusing old log pages.
    const other = new Database(databaseUrl)
    other.pragma('wal_checkpoint(TRUNCATE)')
    other.close()
    const filler = join(folder, 'filler')
    fillDisk(filler)

    const refusedUser = newUserBody(VARIANT)
    assertUnavailable(t, await write.register(server, refusedUser), 'register on a full disk')
    assertUnavailable(t, await write.login(server, session), 'login on a full disk')
    assertUnavailable(t, await write.patch(server, session), 'PATCH on a full disk')
    await assertReadsServed(t, server, session)

    rmSync(filler)
    await assertRecovered(t, server, session)
    await assertNotRegistered(t, server, refusedUser)
    const check = new Database(databaseUrl, { readonly: true })
    t.equal(check.pragma('integrity_check', { simple: true }), 'ok', 'PRAGMA integrity_check after the full disk')
    check.close()
  } finally {
    await server.close()
    execFileSync('umount', ['--lazy', folder])
    rmSync(folder, { recursive: true, force: true })
  }
})

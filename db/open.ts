import { fileURLToPath } from 'node:url'
import { openSqliteStore } from './sqlite/store.js'
import type { AccountStore } from './store.js'

/** `postgres://` and `postgresql://` URLs name PostgreSQL; anything else is SQLite. */
export function isPostgresUrl (databaseUrl: string): boolean {
  return /^postgres(ql)?:\/\//.test(databaseUrl)
}

/** DATABASE_URL as it may be logged: a PostgreSQL URL without its user, password and options. */
export function describeDatabase (databaseUrl: string): string {
  if (!isPostgresUrl(databaseUrl)) return databaseUrl
  const url = new URL(databaseUrl)
  return `${url.protocol}//${url.host}${url.pathname}`
}

/**
 * Opens the store named by DATABASE_URL and applies its migrations: a
 * PostgreSQL URL, or a SQLite file path, `file:` URL or `:memory:`.
 */
export async function openStore (databaseUrl: string): Promise<AccountStore> {
  // The PostgreSQL driver (about 15 MB) is loaded only for a PostgreSQL URL.
  if (isPostgresUrl(databaseUrl)) return await (await import('./postgres/store.js')).openPostgresStore(databaseUrl)
  return openSqliteStore(sqliteFilename(databaseUrl))
}

function sqliteFilename (databaseUrl: string): string {
  if (databaseUrl === ':memory:' || databaseUrl === 'file::memory:') return ':memory:'
  if (databaseUrl.startsWith('file://')) return fileURLToPath(databaseUrl)
  if (databaseUrl.startsWith('file:')) return databaseUrl.slice('file:'.length)
  return databaseUrl
}

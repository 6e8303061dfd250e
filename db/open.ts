import { fileURLToPath } from 'node:url'
import { openSqliteStore } from './sqlite/store.js'
import type { AccountStore } from './store.js'
import { isPostgresUrl } from './database-url.js'

export { describeDatabase, isPostgresUrl } from './database-url.js'

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

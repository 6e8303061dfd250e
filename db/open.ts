import { fileURLToPath } from 'node:url'
import { openSqliteStore } from './sqlite/store.js'
import type { AccountStore } from './store.js'

/**
 * Opens the store named by DATABASE_URL: a file path, `file:` URL or
 * `:memory:` is SQLite. (PostgreSQL URLs are refused by the config for now.)
 */
export function openStore (databaseUrl: string): AccountStore {
  return openSqliteStore(sqliteFilename(databaseUrl))
}

function sqliteFilename (databaseUrl: string): string {
  if (databaseUrl === ':memory:' || databaseUrl === 'file::memory:') return ':memory:'
  if (databaseUrl.startsWith('file://')) return fileURLToPath(databaseUrl)
  if (databaseUrl.startsWith('file:')) return databaseUrl.slice('file:'.length)
  return databaseUrl
}

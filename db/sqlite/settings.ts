import type { SettingsStore } from '../store.js'
import { eq } from 'drizzle-orm'
import { settings } from './schema.js'
import type { SqliteConnection } from './connection.js'

/** The settings of the SQLite store (db/store/settings.ts). */
export function settingsQueries (c: SqliteConnection): SettingsStore {
  return {
    async readSetting (name: string) {
      return c.run(() => c.db.select({ value: settings.value }).from(settings).where(eq(settings.name, name)).get()?.value)
    },

    async writeSetting (name: string, value: string, options: { onlyIfNone?: boolean } = {}) {
      c.run(() => {
        const insert = c.db.insert(settings).values({ name, value })
        if (options.onlyIfNone === true) insert.onConflictDoNothing().run()
        else insert.onConflictDoUpdate({ target: settings.name, set: { value } }).run()
      })
    }
  }
}

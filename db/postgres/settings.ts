import type { SettingsStore } from '../store.js'
import { eq } from 'drizzle-orm'
import { settings } from './schema.js'
import type { PostgresConnection } from './connection.js'

/** The settings of the PostgreSQL store (db/store/settings.ts). */
export function settingsQueries (c: PostgresConnection): SettingsStore {
  return {
    async readSetting (name: string) {
      return await c.run(async () => (await c.db.select({ value: settings.value }).from(settings).where(eq(settings.name, name)))[0]?.value)
    },

    async writeSetting (name: string, value: string, options: { onlyIfNone?: boolean } = {}) {
      await c.run(async () => {
        const insert = c.db.insert(settings).values({ name, value })
        if (options.onlyIfNone === true) await insert.onConflictDoNothing()
        else await insert.onConflictDoUpdate({ target: settings.name, set: { value } })
      })
    }
  }
}

import { hash } from '@node-rs/argon2'
import Database from 'better-sqlite3'
import { sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { users } from '../db/sqlite/schema.js'
import { ARGON2ID_OPTIONS } from '../core/passwords/passwords.js'
import type { StoreCode } from './builds.js'

export const BENCH_PASSWORD = 'bench password 1'

/** The seeded user number `index` (1-based): its id in a fresh store, and how it logs in. */
export function seededUser (index: number) {
  return { id: index, email: `user${index}@bench.example`, username: `user${index}` }
}

/**
 * Creates a store of `count` users at `filename`: migrations through the
 * store of the build under test (`code`), then one prepared Drizzle insert run `count` times in one
 * transaction. Hashing a million passwords with Argon2id would take hours,
 * so every user shares one PHC string of BENCH_PASSWORD, hashed once at the
 * service's parameters: a login verifies exactly as it would for its own hash.
 */
export async function seedStore (filename: string, count: number, code: Pick<StoreCode, 'openSqliteStore'>): Promise<void> {
  await code.openSqliteStore(filename).close()
  const passwordHash = await hash(BENCH_PASSWORD, ARGON2ID_OPTIONS)
  const connection = new Database(filename)
  const db = drizzle({ client: connection })
  const insert = db.insert(users).values({
    firstName: 'Bench',
    lastName: sql.placeholder('lastName'),
    username: sql.placeholder('username'),
    email: sql.placeholder('email'),
    passwordHash,
    createdAt: sql.placeholder('now'),
    updatedAt: sql.placeholder('now')
  }).prepare()
  const now = new Date()
  connection.transaction(() => {
    for (let index = 1; index <= count; index++) {
      const { email, username } = seededUser(index)
      insert.run({ lastName: `User ${index}`, username, email, now })
    }
  })()
  connection.close()
}

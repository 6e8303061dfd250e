import { defineConfig } from 'drizzle-kit'

// Generates the SQLite migrations that the service applies at start (`npm run db:generate`).
export default defineConfig({
  dialect: 'sqlite',
  schema: './db/sqlite/schema.ts',
  out: './db/sqlite/migrations'
})
